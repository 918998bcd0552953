import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// A 1-second schedule run by a fleet of real `jobworker` processes, two of them killed
/// with SIGKILL while it runs: every slot runs exactly once, and nothing runs after pause.
@Suite(.serialized) struct ScheduleFleetTests {
    func workerArguments(_ url: String) -> [String] {
        ["--database-url", url, "--concurrency", "4", "--lease", "2s", "--poll-interval", "200ms",
         "--shutdown-grace", "2s", "--log-level", "debug"]
    }

    @Test func oneJobPerSlotThroughKillsAndNothingAfterPause() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        func runCount() throws -> Int {
            try db.query("select count(*)::bigint from courier.schedule_runs where schedule = 'tick'").rows[0].decode(0, as: Int.self)
        }

        var workers = try (0..<3).map { _ in try SpawnedProcess("jobworker", workerArguments(database.url)) }
        defer { workers.forEach { $0.cleanUp() } }
        #expect(try await eventually(timeout: .seconds(30)) {
            try db.query("select count(*)::bigint from courier.workers").rows[0].decode(0, as: Int.self) == 3
        })
        // The built-in noop handler runs each job, so the runs' outcomes are real too.
        let add = try SpawnedProcess.run("jobctl", ["schedule", "add", "tick", "--every", "1s", "--kind", "noop",
                                                    "--database-url", database.url])
        #expect(add.status == 0, "\(add.output)")

        #expect(try await eventually(timeout: .seconds(20)) { try runCount() >= 4 })
        workers[0].signal(SIGKILL)
        _ = await workers[0].waitForExit(timeout: .seconds(5))
        let afterFirstKill = try runCount()
        #expect(try await eventually(timeout: .seconds(20)) { try runCount() >= afterFirstKill + 4 })
        workers[1].signal(SIGKILL)
        _ = await workers[1].waitForExit(timeout: .seconds(5))
        // A replacement joins while the last original worker carries on.
        workers.append(try SpawnedProcess("jobworker", workerArguments(database.url)))
        let afterSecondKill = try runCount()
        #expect(try await eventually(timeout: .seconds(20)) { try runCount() >= afterSecondKill + 4 })

        let pause = try SpawnedProcess.run("jobctl", ["schedule", "pause", "tick", "--database-url", database.url])
        #expect(pause.status == 0, "\(pause.output)")
        let atPause = try runCount()
        // The fleet's scheduler passes, seen from outside: a second 1-second schedule runs
        // three times, so the fleet has passed over 'tick' at least that often since the pause.
        let canary = try SpawnedProcess.run("jobctl", ["schedule", "add", "canary", "--every", "1s", "--kind", "noop",
                                                       "--database-url", database.url])
        #expect(canary.status == 0, "\(canary.output)")
        #expect(try await eventually(timeout: .seconds(30)) {
            try db.query("select count(*)::bigint from courier.schedule_runs where schedule = 'canary'").rows[0].decode(0, as: Int.self) >= 3
        })
        #expect(try runCount() == atPause, "nothing runs after pause")

        // Exactly one job per slot: the slots are every whole second from the first to the
        // last, each with its own job carrying the slot's key, and no key twice anywhere.
        let runs = try db.query("""
            select extract(epoch from slot)::bigint, job_id, extract(epoch from enqueued_at - slot)::float8,
                   extract(epoch from enqueued_at)::float8
            from courier.schedule_runs where schedule = 'tick' order by slot
            """).rows.map { (slot: try $0.decode(0, as: Int64.self), job: try $0.decode(1, as: Int64.self),
                             lag: try $0.decode(2, as: Double.self), at: try $0.decode(3, as: Double.self)) }
        try #require(runs.count >= 12, "the schedule ran: \(runs.count) runs")
        #expect(runs.map(\.slot) == Array(runs[0].slot...runs[runs.count - 1].slot), "no slot missing between the first and the last")
        #expect(Set(runs.map(\.job)).count == runs.count, "one job per slot")
        let keys = try db.query("""
            select idempotency_key from courier.jobs where idempotency_key like 'schedule:tick:%'
            union all select idempotency_key from courier.completed_jobs where idempotency_key like 'schedule:tick:%'
            union all select idempotency_key from courier.dead_letters where idempotency_key like 'schedule:tick:%'
            """).rows.map { try $0.decode(0, as: String.self) }
        #expect(keys.count == runs.count && Set(keys).count == keys.count, "\(keys.count) jobs for \(runs.count) runs, none doubled")
        let expectedKeys = Set(runs.map { ScheduleTemplate.idempotencyKey(schedule: "tick", slot: Date(timeIntervalSince1970: Double($0.slot))) })
        #expect(Set(keys) == expectedKeys)

        let gaps = zip(runs.dropFirst(), runs).map { $0.at - $1.at }
        let figures = String(format: "schedule fleet: %d runs, max lag from slot %.2f s, max gap between enqueues %.2f s",
                             runs.count, runs.map(\.lag).max() ?? 0, gaps.max() ?? 0)
        print(figures)
        // A slot more than the late tolerance (10 s) late would have been dropped (missed = one); none was.
        #expect(runs.allSatisfy { $0.lag < 10 }, "\(figures)")
        let logged = workers.map(\.output).joined()
        #expect(logged.contains("schedule run enqueued"), "debug line per run")

        for worker in workers where worker.isRunning { worker.signal(SIGTERM) }
        for worker in workers.dropFirst(2) { #expect(await worker.waitForExit(timeout: .seconds(15)) == 0) }
    }
}
