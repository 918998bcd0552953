import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl queues` and `jobctl queue set|reset`: the fleet-wide retry settings per queue.
@Suite struct QueueCommandTests {
    final class Captured: @unchecked Sendable {
        private let lock = NSLock()
        private var out = ""
        private var err = ""
        func appendOut(_ text: String) { lock.withLock { out += text } }
        func appendErr(_ text: String) { lock.withLock { err += text } }
        var stdout: String { lock.withLock { out } }
        var stderr: String { lock.withLock { err } }
    }

    func jobctl(_ arguments: [String], url: String) -> (code: Int32, out: String, err: String) {
        let captured = Captured()
        let io = ControlIO(environment: ["DATABASE_URL": url], writeOut: { captured.appendOut($0) },
                           writeErr: { captured.appendErr($0) }, readStandardInput: { Data() }, isTerminal: false)
        let code = Jobctl.run(arguments, io: io)
        return (code, captured.stdout, captured.stderr)
    }

    func queuesJSON(_ url: String) throws -> [[String: Any]] {
        let result = jobctl(["queues", "--json"], url: url)
        #expect(result.code == 0, "\(result.err)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[String: Any]])
    }

    @Test func setMergesListShowsAndResetClears() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let empty = jobctl(["queues"], url: database.url)
            #expect(empty.code == 0 && empty.out.contains("no queue settings"), "\(empty)")

            let first = jobctl(["queue", "set", "webhooks", "--backoff-base", "500ms", "--jitter", "equal"], url: database.url)
            #expect(first.code == 0, "\(first.err)")
            #expect(first.out.hasPrefix("QUEUE"), "\(first.out)")
            #expect(first.out.contains("webhooks") && first.out.contains("500ms") && first.out.contains("equal"), "\(first.out)")

            // A second set changes only what it names.
            let second = jobctl(["queue", "set", "webhooks", "--backoff-cap", "2m", "--backoff-multiplier", "3", "--json"],
                                url: database.url)
            #expect(second.code == 0, "\(second.err)")
            let merged = try #require(try JSONSerialization.jsonObject(with: Data(second.out.utf8)) as? [String: Any])
            #expect(merged["queue"] as? String == "webhooks")
            #expect(merged["backoff_base_ms"] as? Int == 500)
            #expect(merged["backoff_cap_ms"] as? Int == 120_000)
            #expect(merged["backoff_multiplier"] as? Double == 3)
            #expect(merged["jitter"] as? String == "equal")
            #expect(merged["backoff"] is NSNull && merged["retry_after_cap_ms"] is NSNull, "unset fields are null: \(merged)")

            _ = jobctl(["queue", "set", "alerts", "--backoff", "constant", "--retry-after-cap", "0s"], url: database.url)
            #expect(try queuesJSON(database.url).map { $0["queue"] as? String } == ["alerts", "webhooks"])
            // What the workers read is what jobctl wrote.
            let stored = try QueueSettingsTable.all(on: db)
            #expect(stored.map(\.queue) == ["alerts", "webhooks"])
            #expect(stored[0].retryAfterCapMilliseconds == 0 && stored[0].backoff == "constant")

            let reset = jobctl(["queue", "reset", "webhooks"], url: database.url)
            #expect(reset.code == 0 && reset.out.contains("webhooks: settings cleared"), "\(reset)")
            #expect(try queuesJSON(database.url).map { $0["queue"] as? String } == ["alerts"])
            let again = jobctl(["queue", "reset", "webhooks"], url: database.url)
            #expect(again.code == 3, "nothing to clear is 'nothing matched': \(again)")
        }
    }

    @Test(arguments: [
        (["queue", "set", "q"], "expected one of --backoff"),
        (["queue", "set", "bad queue", "--jitter", "full"], "QUEUE"),
        (["queue", "set", "q", "--jitter", "sometimes"], "--jitter"),
        (["queue", "set", "q", "--backoff", "fibonacci"], "--backoff"),
        (["queue", "set", "q", "--backoff-base", "0s"], "--backoff-base"),
        (["queue", "set", "q", "--backoff-base", "25h"], "--backoff-base"),
        (["queue", "set", "q", "--backoff-cap", "8d"], "--backoff-cap"),
        (["queue", "set", "q", "--backoff-multiplier", "0.5"], "--backoff-multiplier"),
        (["queue", "set", "q", "--retry-after-cap", "soon"], "--retry-after-cap"),
    ])
    func badInputNamesTheFlagAndChangesNothing(arguments: [String], named: String) throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = jobctl(["queue", "set", "q", "--backoff-cap", "1m"], url: database.url)
            let result = jobctl(arguments, url: database.url)
            #expect(result.code == 2, "\(arguments): \(result)")
            #expect(result.err.lowercased().contains(named.lowercased()), "\(arguments): \(result.err)")
            let rows = try QueueSettingsTable.all(on: db)
            #expect(rows == [QueueSettingsTable.Settings(queue: "q", backoffCapMilliseconds: 60_000)], "\(rows)")
        }
    }

    @Test func aBaseLongerThanTheCapIsRefusedBeforeWorkersWouldIgnoreIt() throws {
        try CourierTestDatabase.with { (database, db) throws in
            #expect(jobctl(["queue", "set", "q", "--backoff-cap", "1m"], url: database.url).code == 0)
            let result = jobctl(["queue", "set", "q", "--backoff-base", "2m"], url: database.url)
            #expect(result.code == 2)
            #expect(result.err.contains("--backoff-base") && result.err.contains("nothing was changed"), "\(result.err)")
            #expect(try QueueSettingsTable.all(on: db) == [QueueSettingsTable.Settings(queue: "q", backoffCapMilliseconds: 60_000)])
        }
    }
}
