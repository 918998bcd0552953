import Foundation
import Postgres

/// Soak: steady enqueue and drain for a long time, with a short success retention so the
/// pruner matters. Every `sample` seconds it prints and records throughput, the age of the
/// next job to claim (the claim lag), the jobs and archive tables' and indexes' sizes, their
/// dead tuples and autovacuum runs.
///
/// With `holdSnapshotSeconds` a repeatable-read transaction in the same database takes its
/// snapshot before the first job and keeps it that long (a report or an idle-in-transaction
/// session holding vacuum's horizon), then ends; the soak goes on to its end.
///
/// Its polling never scans a table and holds no long statement: counts come from
/// `pg_stat_user_tables` (rows inserted into the archive are jobs done), sizes from
/// `pg_relation_size`/`pg_indexes_size` summed over a partitioned table's partitions, and the
/// claim lag from one probe of the claim index's head.
struct SoakBench {
    let context: BenchContext
    /// How long, in seconds. Default 30 min.
    let seconds: Int
    /// Jobs enqueued per second (about half the top drain rate is the point).
    let rate: Int
    let workers: Int
    let concurrency: Int
    /// The workers' `--retention`.
    let retention: String
    /// Seconds between samples. Default 60.
    let sample: Int
    /// How long a repeatable-read snapshot is held from the start; 0: none.
    var holdSnapshotSeconds = 0
    /// Recorded with every sample, so a report tells runs apart (bench/run.sh's held mode: "unimpeded", "held").
    var label: String?

    struct Sample {
        var drained: Int, autovacuumJobs: Int, autovacuumArchive: Int
    }

    func run() throws {
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        // The claim lag reads jobs_runnable_idx, whose predicate has `fairness_key is null` from
        // migration 0045 on (a baseline before it has no such column): one descent.
        let unkeyed = try BenchContext.jobsHaveColumn("fairness_key", on: connection) ? "fairness_key is null" : "true"
        let queue = "soak"
        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: concurrency,
                                          extraArguments: ["--shutdown-grace", "5s", "--retention", retention],
                                          context: context, label: "soak-w\(workers)-c\(concurrency)")
        do {
            try fleet.waitReady(connection)
            // Taken before the first job, so no row the soak writes can be vacuumed while it is held.
            var holder: PostgresConnection? = nil
            if holdSnapshotSeconds > 0 {
                let held = try context.connect()
                _ = try held.query(PostgresQuery(unsafeSQL: "begin isolation level repeatable read"))
                _ = try held.query(PostgresQuery(unsafeSQL: "select 1"))
                holder = held
                print("soak: a repeatable-read snapshot is held for the first \(holdSnapshotSeconds) s")
            }
            defer { holder?.close() }
            let stop = StopFlag()
            let enqueuer = Thread { [context] in
                // Ten batches a second, each a single insert; behind schedule it catches up.
                guard let producer = try? context.connect() else { return }
                defer { producer.close() }
                let start = monotonicSeconds()
                var sent = 0
                while !stop.isSet {
                    let due = Int((monotonicSeconds() - start) * Double(rate))
                    if due > sent {
                        let count = min(due - sent, max(1, rate))
                        if (try? context.insertJobs(producer, count: count, queue: queue, url: nil)) == nil { break }
                        _ = try? producer.query(PostgresQuery(unsafeSQL: "select pg_notify('courier_jobs', $1::text)", binds: [queue]))
                        sent += count
                    }
                    usleep(100_000)
                }
            }
            enqueuer.start()
            let t0 = monotonicSeconds()
            var previous = try read(connection)
            var rates: [Double] = []
            print("sample  drained/s  claim_lag_s  latency_p50_ms  latency_p99_ms  jobs_heap  jobs_idx  archive_heap  archive_idx  dead_jobs  dead_archive  autovac_jobs  autovac_archive  snapshot   (sizes in KiB)")
            var index = 0
            while monotonicSeconds() - t0 < Double(seconds) {
                let intervalStart = monotonicSeconds()
                while monotonicSeconds() - intervalStart < Double(sample) && monotonicSeconds() - t0 < Double(seconds) {
                    if let held = holder, monotonicSeconds() - t0 >= Double(holdSnapshotSeconds) {
                        _ = try? held.query(PostgresQuery(unsafeSQL: "commit"))
                        held.close()
                        holder = nil
                        print(String(format: "soak: the snapshot was released at %.0f s", monotonicSeconds() - t0))
                    }
                    usleep(200_000)
                }
                let held = holder != nil
                let elapsed = monotonicSeconds() - intervalStart
                index += 1
                let now = try read(connection)
                let figures = try sizes(connection, queue: queue, unkeyed: unkeyed)
                let perSecond = Double(now.drained - previous.drained) / elapsed
                let pickup = try pickupLatency(connection)
                let indexes = try indexSizes(connection)
                rates.append(perSecond)
                let line = String(format: "%6d  %9.0f  %11.3f  %14.1f  %14.1f  %9d  %8d  %12d  %11d  %9d  %12d  %12d  %15d  %@", index, perSecond, figures.lag, pickup.p50, pickup.p99,
                                  figures.jobsHeap / 1024, figures.jobsIndexes / 1024, figures.archiveHeap / 1024,
                                  figures.archiveIndexes / 1024, figures.deadJobs, figures.deadArchive,
                                  now.autovacuumJobs - previous.autovacuumJobs, now.autovacuumArchive - previous.autovacuumArchive,
                                  held ? "held" : "-")
                print(line)
                fflush(nil)   // shown as it is printed, even into a file
                context.log.record("soak", [
                    "interval": index, "seconds": Stats.rounded(elapsed, 2), "rate_target": rate, "drained_per_s": Stats.rounded(perSecond, 1),
                    "claim_lag_s": Stats.rounded(figures.lag, 3),
                    "latency_p50_ms": Stats.json(pickup.p50, 1), "latency_p99_ms": Stats.json(pickup.p99, 1),
                    "latency_sample": pickup.count, "index_kb": indexes, "jobs_heap_kb": figures.jobsHeap / 1024,
                    "jobs_indexes_kb": figures.jobsIndexes / 1024, "archive_heap_kb": figures.archiveHeap / 1024,
                    "archive_indexes_kb": figures.archiveIndexes / 1024, "dead_tuples_jobs": figures.deadJobs,
                    "dead_tuples_archive": figures.deadArchive, "autovacuum_jobs": now.autovacuumJobs - previous.autovacuumJobs,
                    "autovacuum_archive": now.autovacuumArchive - previous.autovacuumArchive, "workers": workers,
                    "concurrency": concurrency, "retention": retention, "snapshot_held": held,
                    "hold_snapshot_s": holdSnapshotSeconds, "label": label.map { $0 as Any } ?? NSNull(),
                ])
                previous = now
            }
            stop.set()
            while !enqueuer.isFinished { usleep(50_000) }
            try fleet.stop()
            let window = max(1, min(5, rates.count / 2))
            let first = rates.prefix(window).reduce(0, +) / Double(window)
            let last = rates.suffix(window).reduce(0, +) / Double(window)
            print("soak: jobs indexes at the end (KiB): " + (try indexSizes(connection)).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            print(String(format: "soak: first %d intervals %.0f/s, last %d %.0f/s: %.1f%%", window, first, window, last, first > 0 ? 100 * last / first : 0))
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }

    /// Enqueue-to-finish time (created_at to finished_at) of the jobs archived in the last
    /// second: one range of the archive's finished_at index, about `rate` rows.
    private func pickupLatency(_ connection: PostgresConnection) throws -> (p50: Double, p99: Double, count: Int) {
        let row = try connection.query(PostgresQuery(unsafeSQL: """
            select coalesce(percentile_cont(0.5) within group (order by ms), 'NaN'), coalesce(percentile_cont(0.99) within group (order by ms), 'NaN'),
                   count(*)
            from (select extract(epoch from finished_at - created_at)::float8 * 1000 as ms from courier.completed_jobs
                  where finished_at > now() - interval '1 second') s
            """)).rows[0]
        return (try row.decode(0, as: Double.self), try row.decode(1, as: Double.self), try row.decode(2, as: Int.self))
    }

    /// The tables that hold the rows of courier.jobs and courier.completed_jobs: their
    /// partitions where they are partitioned (sql/0048), else themselves. With `table`, its
    /// column naming which of the two each row belongs to.
    static let storedTables = """
        select t.relid, p.name from (values ('jobs', 'courier.jobs'::regclass), ('completed_jobs', 'courier.completed_jobs'::regclass)) p(name, rel)
        cross join lateral (select relid from pg_partition_tree(p.rel) where isleaf
                            union all select p.rel where (select relkind from pg_class where oid = p.rel) = 'r') t
        """

    /// Every index of courier.jobs and courier.completed_jobs, KiB each (a partitioned index:
    /// summed over its partitions; catalog and pg_relation_size only).
    private func indexSizes(_ connection: PostgresConnection) throws -> [String: Int] {
        var sizes: [String: Int] = [:]
        for row in try connection.query(PostgresQuery(unsafeSQL: """
            select coalesce(pg_partition_root(c.oid), c.oid)::regclass::text, (sum(pg_relation_size(c.oid)) / 1024)::bigint
            from pg_index i join pg_class c on c.oid = i.indexrelid
            where i.indrelid in (select relid from (\(Self.storedTables)) s)
            group by 1
            """)).rows {
            sizes[try row.decode(0, as: String.self)] = try row.decode(1, as: Int.self)
        }
        return sizes
    }

    private func read(_ connection: PostgresConnection) throws -> Sample {
        _ = try connection.query(PostgresQuery(unsafeSQL: "select pg_stat_clear_snapshot()"))
        let rows = try connection.query(PostgresQuery(unsafeSQL: """
            select s.name, sum(u.n_tup_ins)::bigint, sum(u.autovacuum_count)::bigint
            from (\(Self.storedTables)) s join pg_stat_user_tables u on u.relid = s.relid
            group by s.name
            """)).rows
        var sample = Sample(drained: 0, autovacuumJobs: 0, autovacuumArchive: 0)
        for row in rows {
            let name = try row.decode(0, as: String.self)
            if name == "jobs" {
                sample.autovacuumJobs = try row.decode(2, as: Int.self)
            } else {
                // Every job of the soak succeeds, and each success is archived.
                sample.drained = try row.decode(1, as: Int.self)
                sample.autovacuumArchive = try row.decode(2, as: Int.self)
            }
        }
        return sample
    }

    /// `unkeyed`: the runnable index's fairness-key predicate, or `true` on a schema without it.
    private func sizes(_ connection: PostgresConnection, queue: String, unkeyed: String)
        throws -> (lag: Double, jobsHeap: Int, jobsIndexes: Int, archiveHeap: Int, archiveIndexes: Int, deadJobs: Int, deadArchive: Int) {
        let row = try connection.query(PostgresQuery(unsafeSQL: """
            with stored as (\(Self.storedTables)),
            sized as (select s.name, sum(pg_relation_size(s.relid))::bigint heap, sum(pg_indexes_size(s.relid))::bigint indexes,
                             sum(u.n_dead_tup)::bigint dead
                      from stored s left join pg_stat_user_tables u on u.relid = s.relid group by s.name)
            select (select heap from sized where name = 'jobs'), (select indexes from sized where name = 'jobs'),
                   (select heap from sized where name = 'completed_jobs'), (select indexes from sized where name = 'completed_jobs'),
                   (select coalesce(dead, 0) from sized where name = 'jobs'), (select coalesce(dead, 0) from sized where name = 'completed_jobs'),
                   coalesce((select extract(epoch from now() - run_at)::float8 from courier.jobs
                             where queue = $1::text and state = 'available' and held_since is null and not gated
                               and \(unkeyed)
                             order by priority, run_at, id limit 1), 0)
            """, binds: [queue])).rows[0]
        return (try row.decode(6, as: Double.self), try row.decode(0, as: Int.self), try row.decode(1, as: Int.self),
                try row.decode(2, as: Int.self), try row.decode(3, as: Int.self), try row.decode(4, as: Int.self),
                try row.decode(5, as: Int.self))
    }
}

/// A flag one thread sets and another reads.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
