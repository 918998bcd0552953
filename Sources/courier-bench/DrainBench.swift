import CourierStore
import CourierTestSupport
import Foundation
import Postgres

/// Drain throughput: N jobs pre-enqueued, workers started and idle, then GO; jobs/s
/// from GO to an empty queue.
///
/// Method (matching the peers harness, bench_pgqueuer.py `drain`): the jobs are
/// inserted before the run and VACUUM ANALYZEd; the worker processes start, connect,
/// register and go idle. To hold them idle while jobs exist, their queue is paused
/// (`courier.queue_pause`, migration 0014), which the claim checks once per statement;
/// GO is the transaction that resumes it and sends the NOTIFY, and t0 is taken when its
/// COMMIT returns. A baseline older than queue pauses is held by a forced-open circuit
/// breaker on the jobs' destination instead, which its claim skips, and GO deletes that
/// row. A breaker is not used where pauses exist: from migration 0022 on, the traffic
/// keeper holds an open destination's waiting jobs and must release them all after GO,
/// and the drain would measure that release (in passes of 2,000) rather than claiming.
/// t1 is the end of the first poll (every 5 ms) that finds no job of the queue left in
/// courier.jobs: a job leaves that table only in the transaction that records its
/// success, so t1 is after the last acknowledgement committed (the peers' DONE is
/// printed after their completion writes flushed).
struct DrainBench {
    enum Kind: String { case noop, http }

    let context: BenchContext
    let kind: Kind
    let jobs: Int
    let httpURL: String
    /// The workers' `--retention`; "0" runs them without the success archive.
    var retention: String?

    /// Holds a repeatable-read transaction (with its snapshot taken) open across the drain, as a
    /// report query or `pg_dump` elsewhere in the database would: the xmin horizon stands still.
    var holdSnapshot = false

    /// Marks the rows for a report section of their own (e.g. "longtx"); nil for the drain tables.
    var tag: String?

    /// Spreads the jobs over this many fairness keys (`k0`, `k1`, ...), so the fair claim drains
    /// them; 0 leaves them without a key (the plain claim). Needs migration 0045.
    var fairnessKeys = 0

    /// "Is a job of queue $1 still waiting or running?" through the claim indexes and the
    /// running-jobs index, never a scan: jobs_runnable_idx (its predicate has `not gated` from
    /// migration 0014 on and `fairness_key is null` from 0045 on: a baseline before them lacks
    /// the columns), jobs_fair_idx for jobs with a fairness key (0045; a scalar subquery in its
    /// order, which the planner keeps on the index where an EXISTS would be a scan), and jobs_running_idx.
    static func drainedProbe(_ connection: PostgresConnection) throws -> String {
        let gated = try BenchContext.jobsHaveColumn("gated", on: connection)
        let keyed = try BenchContext.jobsHaveColumn("fairness_key", on: connection)
        let runnable = "queue = $1::text and state = 'available' and held_since is null" + (gated ? " and not gated" : "")
        return """
            select exists (select 1 from courier.jobs where \(runnable)\(keyed ? " and fairness_key is null" : ""))
                \(keyed ? "or (select fairness_key from courier.jobs where \(runnable) and fairness_key is not null order by queue, fairness_key limit 1) is not null" : "")
                or exists (select 1 from courier.jobs where state = 'running')
            """
    }

    /// What holds the started workers idle until GO (see the type's comment).
    enum Gate {
        case queuePause, forcedOpenBreaker

        /// The queue pause where the schema has one (migration 0014), else the breaker.
        init(_ connection: PostgresConnection) throws {
            let hasPause = try connection.query(PostgresQuery(unsafeSQL: """
                select exists (select 1 from pg_proc where proname = 'queue_pause' and pronamespace = 'courier'::regnamespace)
                """)).rows[0].decode(0, as: Bool.self)
            self = hasPause ? .queuePause : .forcedOpenBreaker
        }

        func close(queue: String, destination: String, on connection: PostgresConnection) throws {
            switch self {
            case .queuePause:
                _ = try QueueSettingsTable.setPaused(queue: queue, true, on: connection)
            case .forcedOpenBreaker:
                try connection.execute(PostgresQuery(unsafeSQL: """
                    insert into courier.breakers (destination, state, forced, open_until) values ($1::text, 'open', true, now() + interval '1 day')
                    """, binds: [destination]))
            }
        }

        func open(queue: String, destination: String, on connection: PostgresConnection) throws {
            switch self {
            case .queuePause:
                _ = try QueueSettingsTable.setPaused(queue: queue, false, on: connection)
            case .forcedOpenBreaker:
                try connection.execute(PostgresQuery(unsafeSQL: "delete from courier.breakers where destination = $1::text", binds: [destination]))
            }
        }
    }

    var archives: Bool { retention.map { !["0", "0s", "0ms"].contains($0) } ?? true }

    func run(workers: Int, concurrency: Int, rep: Int) throws {
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        let queue = "bench"
        let url: String? = kind == .http ? httpURL : nil
        let destination = try url.map {
            try connection.query(PostgresQuery(unsafeSQL: "select courier.destination_of($1::text)", binds: [$0])).rows[0].decode(0, as: String.self)
        } ?? "job:noop"
        let gate = try Gate(connection)
        try gate.close(queue: queue, destination: destination, on: connection)
        try context.insertJobs(connection, count: jobs, queue: queue, url: url, keys: fairnessKeys > 0 ? .spread(fairnessKeys) : nil)
        try connection.simpleQuery("vacuum analyze courier.jobs")

        var extra = ["--shutdown-grace", "5s"]
        if kind == .http { extra.append("--allow-private-networks") }
        if let retention { extra += ["--retention", retention] }
        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: concurrency, extraArguments: extra,
                                          context: context,
                                          label: "\(kind.rawValue)-w\(workers)-c\(concurrency)\(archives ? "" : "-noarchive")-r\(rep)")
        do {
            try fleet.waitReady(connection)
            // Closed with its session if the drain fails; released right after it otherwise.
            let holder = holdSnapshot ? try SnapshotHolder(connection: context.connect()) : nil
            let sampler = CPUSampler(workerPIDs: fleet.pids, postmaster: context.postmasterPID)
            let before = sampler.snapshot()
            let switchesBefore = WorkerCounters.switches(pids: fleet.pids)
            let goTime: Date = try connection.withTransaction { tx in
                try gate.open(queue: queue, destination: destination, on: tx)
                return try tx.query(PostgresQuery(unsafeSQL: "select now() from pg_notify('courier_jobs', $1::text)", binds: [queue]))
                    .rows[0].decode(0, as: Date.self)
            }
            let t0 = monotonicSeconds()
            var t1 = t0
            let deadline = t0 + 600
            // Polled without scanning the table (a scan from the heap's start every 5 ms walks every
            // drained row's dead version, and under a held snapshot none can be pruned): first one
            // primary-key probe of the last job (the claim takes them in id order: one priority, one
            // run_at), then the runnable and running indexes' heads until both are empty.
            let last = try context.lastJobID(connection)
            let drainedSQL = try DrainBench.drainedProbe(connection)
            var lastGone = false
            while true {
                if !lastGone {
                    lastGone = try !connection.query(PostgresQuery(unsafeSQL: "select exists (select 1 from courier.jobs where id = $1::bigint)",
                                                                   binds: [last])).rows[0].decode(0, as: Bool.self)
                }
                let left = try !lastGone || connection.query(PostgresQuery(unsafeSQL: drainedSQL, binds: [queue])).rows[0].decode(0, as: Bool.self)
                t1 = monotonicSeconds()
                if !left { break }
                guard t1 < deadline else { throw BenchError("the queue was not drained within 600 s") }
                usleep(5_000)
            }
            let after = sampler.snapshot()
            let switchesAfter = WorkerCounters.switches(pids: fleet.pids)
            let counters = WorkerCounters.scrape(workers: workers, workDirectory: context.workDirectory)
            try holder?.release()
            let seconds = t1 - t0
            let peakKB = fleet.peakRSSKB
            try fleet.stop()
            let done = try connection.query(PostgresQuery(unsafeSQL: """
                select count(*), count(*) filter (where status = 200), extract(epoch from max(finished_at) - $1::timestamptz)::float8
                from courier.completed_jobs where queue = $2::text
                """, binds: [goTime, queue])).rows[0]
            let dead = try context.count(connection, "select count(*) from courier.dead_letters")
            // Without the archive, a job that left courier.jobs and is not a dead letter succeeded.
            let completed = archives ? try done.decode(0, as: Int.self) : jobs - dead
            let ok200 = archives ? try done.decode(1, as: Int.self) : completed
            let dbSeconds = try done.decode(2, as: Double?.self) ?? .nan
            guard completed == jobs, dead == 0, kind == .noop || ok200 == jobs else {
                throw BenchError("drain check failed: \(completed) completed (\(ok200) with 200), \(dead) dead letters, expected \(jobs)")
            }
            var row: [String: Any] = [
                "kind": kind.rawValue, "n": jobs, "workers": workers, "concurrency": concurrency, "rep": rep,
                "seconds": Stats.rounded(seconds, 4), "jobs_per_s": Stats.rounded(Double(jobs) / seconds, 1),
                "worker_peak_rss_kb": peakKB,
                "retention": retention ?? "24h",
                "held_snapshot": holdSnapshot,
            ]
            if let tag { row["tag"] = tag }
            if fairnessKeys > 0 { row["fairness_keys"] = fairnessKeys }
            // From the archive's finish times: absent without it.
            if dbSeconds.isFinite { row["db_seconds"] = Stats.rounded(dbSeconds, 4) }
            let split = CPUSampler.split(before, after)
            row["cpu"] = split.summary(seconds: seconds)
            // CPU seconds per 100k jobs: comparable across runs on a loaded machine, where wall throughput is not.
            row["worker_cpu_s_per_100k"] = Stats.rounded(split.workers * 100_000 / Double(jobs), 3)
            row["postgres_cpu_s_per_100k"] = Stats.rounded(split.postgres * 100_000 / Double(jobs), 3)
            row["switches_per_1k_jobs"] = WorkerCounters.switchesPerThousand(switchesBefore, switchesAfter, jobs: jobs)
            if let claims = counters["courier_claim_batch_size_count"], claims > 0 {
                row["claims"] = Int(claims)
                row["jobs_per_claim"] = Stats.rounded((counters["courier_claim_batch_size_sum"] ?? 0) / claims, 1)
            }
            if let flushes = counters["courier_ack_latency_seconds_count"], flushes > 0 {
                row["ack_flushes"] = Int(flushes)
                row["acks_per_flush"] = Stats.rounded((counters["courier_acked_jobs_total"] ?? 0) / flushes, 1)
            }
            context.log.record("drain", row)
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }
}
