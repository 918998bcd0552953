import CourierStore
import Foundation
import Postgres

/// Backlog: the drain rate of `runnable` no-op jobs while `waiting` more wait in the same
/// queue (half scheduled a day ahead, half held behind a forced-open breaker), against the
/// same drain on an otherwise empty table, in the same run (aim: >= 90 %).
///
/// Method: the queue is paused (a paused queue yields nothing to the claim), the jobs are
/// COPYed in over `loaders` connections and VACUUM ANALYZEd (the setup time is printed),
/// the workers start and go idle; GO is one transaction that unpauses the queue and sends
/// the NOTIFY. The runnable jobs are loaded last, so their ids are one range above every
/// waiting job's; a job leaves `courier.jobs` only once its success is committed. The drain
/// ends at the first poll (every 5 ms) that finds no job left in that range. Each poll
/// starts from the lowest id the previous one found (a primary key probe), so over the
/// drain the polls walk the drained jobs' dead index entries once, not once per poll.
/// (Until 2026-12-02 the poll asked the claim index and the running-jobs index from their
/// start: with no vacuum yet, each poll walked every entry drained so far, 127 ms and 8.5k
/// buffers a poll by the end of a 1M drain, PostgreSQL time taken from what it measured.)
struct BacklogBench {
    let context: BenchContext
    let runnable: Int
    let waiting: Int
    /// Share of `waiting` held behind an open breaker; the rest is scheduled a day ahead.
    let heldShare: Double
    let loaders: Int
    let workers: Int
    let concurrency: Int
    /// Which of ``scenarios`` to run, in this order (both by default).
    var scenarios: [String] = BacklogBench.scenarios

    /// The empty table, then the backlog.
    static let scenarios = ["empty", "backlog"]

    let queue = "bench"
    let heldDestination = "job:backlog-held"

    func run(rep: Int) throws {
        for scenario in scenarios {
            try run(scenario: scenario, rep: rep)
        }
    }

    private func run(scenario: String, rep: Int) throws {
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        _ = try QueueSettingsTable.setPaused(queue: queue, true, on: connection)
        let withBacklog = scenario == "backlog"
        let held = withBacklog ? Int(Double(waiting) * heldShare) : 0
        let scheduled = withBacklog ? waiting - held : 0
        if held > 0 { _ = try BreakersTable.force(destination: heldDestination, action: .open, actor: "courier-bench", on: connection) }
        let tomorrow = try BulkJobs.runAt(secondsFromNow: 86_400, on: connection)
        // Waiting rows first, as a backlog that was there before the runnable work arrived.
        var loadSeconds = try BulkJobs.load([
            .init(count: scheduled, queue: queue, destination: "job:noop", runAt: tomorrow),
            .init(count: held, queue: queue, destination: heldDestination, runAt: nil, held: true),
        ], loaders: loaders, context: context)
        let lastWaitingID = try context.lastJobID(connection)
        loadSeconds += try BulkJobs.load([.init(count: runnable, queue: queue, destination: "job:noop", runAt: nil)],
                                         loaders: loaders, context: context)
        let lastRunnableID = try context.lastJobID(connection)
        let vacuumStart = monotonicSeconds()
        try connection.simpleQuery("vacuum analyze courier.jobs")
        let vacuumSeconds = monotonicSeconds() - vacuumStart
        print(String(format: "backlog %@ rep %d: setup: %d runnable + %d scheduled + %d held loaded in %.1f s (%.0f rows/s, %d loaders), vacuum analyze %.1f s",
                     scenario, rep, runnable, scheduled, held, loadSeconds, Double(runnable + scheduled + held) / loadSeconds, loaders, vacuumSeconds))

        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: concurrency,
                                          extraArguments: ["--shutdown-grace", "5s"], context: context,
                                          label: "backlog-\(scenario)-w\(workers)-c\(concurrency)-r\(rep)")
        do {
            try fleet.waitReady(connection)
            let sampler = CPUSampler(workerPIDs: fleet.pids, postmaster: context.postmasterPID)
            let before = sampler.snapshot()
            try connection.withTransaction { tx in
                _ = try QueueSettingsTable.setPaused(queue: queue, false, on: tx)
                _ = try tx.query(PostgresQuery(unsafeSQL: "select pg_notify('courier_jobs', $1::text)", binds: [queue]))
            }
            let t0 = monotonicSeconds()
            var t1 = t0
            let deadline = t0 + 3600
            var lowest = lastWaitingID + 1
            while true {
                let rows = try connection.query(PostgresQuery(unsafeSQL: """
                    select id from courier.jobs where id >= $1::bigint and id <= $2::bigint order by id limit 1
                    """, binds: [lowest, lastRunnableID])).rows
                t1 = monotonicSeconds()
                guard let left = rows.first else { break }
                lowest = try left.decode(0, as: Int64.self)
                guard t1 < deadline else { throw BenchError("backlog: the runnable jobs were not drained within an hour") }
                usleep(5_000)
            }
            let after = sampler.snapshot()
            let seconds = t1 - t0
            try fleet.stop()
            let done = try context.count(connection, "select count(*) from courier.completed_jobs")
            let dead = try context.count(connection, "select count(*) from courier.dead_letters")
            guard done == runnable, dead == 0 else {
                throw BenchError("backlog check failed: \(done) completed, \(dead) dead letters, expected \(runnable)")
            }
            let rate = Double(runnable) / seconds
            print(String(format: "backlog %@ rep %d: %d runnable drained in %.2f s = %.0f jobs/s with %d waiting",
                         scenario, rep, runnable, seconds, rate, scheduled + held))
            let split = CPUSampler.split(before, after)
            context.log.record("backlog", [
                "scenario": scenario, "rep": rep, "runnable": runnable, "scheduled": scheduled, "held": held,
                "workers": workers, "concurrency": concurrency, "seconds": Stats.rounded(seconds, 3),
                "jobs_per_s": Stats.rounded(rate, 1), "load_seconds": Stats.rounded(loadSeconds, 2),
                "vacuum_seconds": Stats.rounded(vacuumSeconds, 2), "loaders": loaders, "cpu": split.summary(seconds: seconds),
                "postgres_cpu_s_per_100k": Stats.rounded(split.postgres * 100_000 / Double(runnable), 3),
            ])
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }
}
