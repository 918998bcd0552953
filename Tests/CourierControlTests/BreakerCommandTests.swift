import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl breakers` and `jobctl breaker open|close|reset`, run in-process
/// against a real database exactly as the executable runs them.
@Suite struct BreakerCommandTests {
    /// Runs jobctl with `DATABASE_URL` set to `url` (the shared runner, through the environment).
    func jobctl(_ arguments: [String], url: String) -> JobctlOutcome {
        CourierControlTests.jobctl(arguments, databaseURL: nil, environment: ["DATABASE_URL": url])
    }

    func breakersJSON(_ url: String) throws -> [[String: Any]] {
        let result = jobctl(["breakers", "--json"], url: url)
        #expect(result.status == 0, "\(result.err)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[String: Any]])
    }

    static let down = "https://down.example.com:443"

    @Test func breakersListsStateCountsNextProbeAndWaitingJobs() throws {
        try CourierTestDatabase.with { (database, db) throws in
            #expect(try breakersJSON(database.url).isEmpty)
            let empty = jobctl(["breakers"], url: database.url)
            #expect(empty.status == 0 && empty.out.contains("no breakers yet"))

            for _ in 0..<3 { _ = try JobsTable.enqueue(EnqueueRequest(url: "https://down.example.com/hook"), on: db) }
            let policy = BreakersTable.ReportPolicy(failureThreshold: 5, windowMilliseconds: 60_000, minimumVolume: 20,
                                                    failureRate: 0.5, cooldownMilliseconds: 30_000,
                                                    cooldownMaxMilliseconds: 600_000, probeLeaseMilliseconds: 30_000)
            try BreakersTable.report(destination: "https://flaky.example.com:443", successes: 4, failures: 2, trailingFailures: 1,
                                     worker: "w", policy: policy, on: db)
            #expect(try BreakersTable.report(destination: Self.down, successes: 0, failures: 5, trailingFailures: 5,
                                             worker: "w", policy: policy, on: db) == "open")

            // The traffic keeper holds the open breaker's jobs (bounded batches, off the report path).
            _ = try JobsTable.trafficMaintain(batch: 10_000, on: db)
            let rows = try breakersJSON(database.url)
            #expect(rows.map { $0["destination"] as? String } == [Self.down, "https://flaky.example.com:443"], "open breakers first")
            let down = rows[0]
            #expect(down["state"] as? String == "open")
            #expect(down["forced"] as? Bool == false)
            #expect(down["consecutive_failures"] as? Int == 5)
            #expect(down["waiting_jobs"] as? Int == 3)
            #expect(down["deferred_jobs"] as? Int == 3)
            #expect(down["opened_count"] as? Int == 1)
            #expect(down["cooldown_ms"] as? Int == 30_000)
            #expect(down["next_probe_at"] is String, "an open breaker shows its next probe time")
            #expect(down["since"] is String)
            let flaky = rows[1]
            #expect(flaky["state"] as? String == "closed")
            #expect(flaky["consecutive_failures"] as? Int == 1)
            #expect(flaky["window_failures"] as? Int == 2 && flaky["window_successes"] as? Int == 4)
            #expect(flaky["next_probe_at"] == nil)

            let text = jobctl(["breakers"], url: database.url)
            #expect(text.status == 0)
            let lines = text.out.split(separator: "\n")
            #expect(lines.first?.hasPrefix("DESTINATION") == true)
            #expect(lines.contains { $0.hasPrefix(Self.down) && $0.contains("open") })
        }
    }

    @Test func breakerOpenCloseAndResetByHand() throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = try JobsTable.enqueue(EnqueueRequest(url: "https://down.example.com/hook"), on: db)
            let opened = jobctl(["breaker", "open", Self.down], url: database.url)
            #expect(opened.status == 0, "\(opened.err)")
            #expect(opened.err.isEmpty, "a destination a job uses draws no warning: \(opened.err)")
            #expect(opened.out.contains("\(Self.down): closed -> open"))
            var row = try #require(try breakersJSON(database.url).first)
            #expect(row["state"] as? String == "open" && row["forced"] as? Bool == true)
            #expect(row["next_probe_at"] == nil, "a forced breaker has no probe time")
            #expect(jobctl(["breakers"], url: database.url).out.contains("open (forced)"))
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: 30_000, on: db).isEmpty)

            let closed = jobctl(["breaker", "close", Self.down, "--json"], url: database.url)
            #expect(closed.status == 0, "\(closed.err)")
            let closedJSON = try #require(try JSONSerialization.jsonObject(with: Data(closed.out.utf8)) as? [String: String])
            #expect(closedJSON == ["destination": Self.down, "from": "open", "to": "closed"])
            row = try #require(try breakersJSON(database.url).first)
            #expect(row["state"] as? String == "closed" && row["forced"] as? Bool == false)

            let reset = jobctl(["breaker", "reset", Self.down], url: database.url)
            #expect(reset.status == 0 && reset.out.contains("closed -> closed"))
            let actors = try db.query("select reason, worker from courier.breaker_events where destination = \(Self.down) order by id")
                .rows.map { "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: String.self))" }
            #expect(actors.count == 3)
            #expect(actors.map { $0.split(separator: " ")[0] } == ["operator_open", "operator_close", "operator_reset"])
            #expect(actors.allSatisfy { $0.contains(" jobctl:") }, "the operator is recorded: \(actors)")
        }
    }

    @Test func aDestinationNothingUsesIsOpenedWithAWarning() throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = try JobsTable.enqueue(EnqueueRequest(url: "https://down.example.com/hook"), on: db)
            // A typo: no port. The breaker is still opened (an operator may open one before
            // any job arrives), but the warning says nothing uses the name.
            let typo = jobctl(["breaker", "open", "https://down.example.com"], url: database.url)
            #expect(typo.status == 0, "\(typo.err)")
            #expect(typo.err.contains("warning: no breaker, waiting job or dead letter has destination 'https://down.example.com'"),
                    "\(typo.err)")
            #expect(try breakersJSON(database.url).map { $0["destination"] as? String } == ["https://down.example.com"])
            // Now the row exists: closing it draws no warning.
            let closed = jobctl(["breaker", "close", "https://down.example.com"], url: database.url)
            #expect(closed.status == 0 && closed.err.isEmpty, "\(closed.err)")
        }
    }

    @Test func breakerCommandsRefuseBadUsage() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let missing = jobctl(["breaker", "open"], url: database.url)
            #expect(missing.status == 2)
            #expect(missing.err.lowercased().contains("destination"), "the error names the missing argument: \(missing.err)")
            let unknown = jobctl(["breaker", "explode", Self.down], url: database.url)
            #expect(unknown.status == 2, "\(unknown.err)")
            #expect(try db.query("select count(*)::bigint from courier.breakers").rows[0].decode(0, as: Int.self) == 0,
                    "bad usage changes nothing")
            let unreachable = jobctl(["breakers"], url: "postgresql://courier@127.0.0.1:1/none?connect_timeout=2")
            #expect(unreachable.status == 1, "an unreachable database is a runtime failure")
        }
    }
}
