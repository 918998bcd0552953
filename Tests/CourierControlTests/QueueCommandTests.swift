import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl queues` and `jobctl queue set|reset`: the fleet-wide retry settings per queue.
@Suite struct QueueCommandTests {
    func queuesJSON(_ fixture: ControlFixture) throws -> [[String: Any]] {
        let result = fixture.run(["queues", "--json"])
        #expect(result.status == 0, "\(result)")
        return try result.array()
    }

    @Test func setMergesListShowsAndResetClears() throws {
        try ControlFixture.with { fixture throws in
            let db = fixture.db
            let empty = fixture.run(["queues"])
            #expect(empty.status == 0 && empty.out.contains("no queue settings"), "\(empty)")

            let first = fixture.run(["queue", "set", "webhooks", "--backoff-base", "500ms", "--jitter", "equal"])
            #expect(first.status == 0, "\(first.err)")
            #expect(first.out.hasPrefix("QUEUE"), "\(first.out)")
            #expect(first.out.contains("webhooks") && first.out.contains("500ms") && first.out.contains("equal"), "\(first.out)")

            // A second set changes only what it names.
            let second = fixture.run(["queue", "set", "webhooks", "--backoff-cap", "2m", "--backoff-multiplier", "3", "--json"])
            #expect(second.status == 0, "\(second.err)")
            let merged = try second.object()
            #expect(merged["queue"] as? String == "webhooks")
            #expect(merged["backoff_base_ms"] as? Int == 500)
            #expect(merged["backoff_cap_ms"] as? Int == 120_000)
            #expect(merged["backoff_multiplier"] as? Double == 3)
            #expect(merged["jitter"] as? String == "equal")
            #expect(merged["backoff"] is NSNull && merged["retry_after_cap_ms"] is NSNull, "unset fields are null: \(merged)")

            _ = fixture.run(["queue", "set", "alerts", "--backoff", "constant", "--retry-after-cap", "0s"])
            #expect(try queuesJSON(fixture).map { $0["queue"] as? String } == ["alerts", "webhooks"])
            // What the workers read is what jobctl wrote.
            let stored = try QueueSettingsTable.all(on: db)
            #expect(stored.map(\.queue) == ["alerts", "webhooks"])
            #expect(stored[0].retryAfterCapMilliseconds == 0 && stored[0].backoff == "constant")

            let reset = fixture.run(["queue", "reset", "webhooks"])
            #expect(reset.status == 0 && reset.out.contains("webhooks: settings cleared"), "\(reset)")
            #expect(try queuesJSON(fixture).map { $0["queue"] as? String } == ["alerts"])
            let again = fixture.run(["queue", "reset", "webhooks"])
            #expect(again.status == 3, "nothing to clear is 'nothing matched': \(again)")
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
        (["queue", "set", "q", "--priority-head-start", "0s"], "--priority-head-start"),
        (["queue", "set", "q", "--priority-head-start", "25h"], "--priority-head-start"),
        (["queue", "set", "q", "--priority-head-start", "1s", "--no-priority-head-start"], "--no-priority-head-start"),
    ])
    func badInputNamesTheFlagAndChangesNothing(arguments: [String], named: String) throws {
        try ControlFixture.with { fixture throws in
            let db = fixture.db
            _ = fixture.run(["queue", "set", "q", "--backoff-cap", "1m"])
            let result = fixture.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
            #expect(result.err.lowercased().contains(named.lowercased()), "\(arguments): \(result.err)")
            let rows = try QueueSettingsTable.all(on: db)
            #expect(rows == [QueueSettingsTable.Settings(queue: "q", backoffCapMilliseconds: 60_000)], "\(rows)")
        }
    }

    /// `--priority-head-start` is stored for the claim, shown by `jobctl queues`, kept by a set
    /// that does not name it, and cleared by `--no-priority-head-start`.
    @Test func thePriorityHeadStartIsSetShownKeptAndCleared() throws {
        try ControlFixture.with { fixture throws in
            let db = fixture.db
            let set = fixture.run(["queue", "set", "webhooks", "--priority-head-start", "250ms"])
            #expect(set.status == 0, "\(set)")
            #expect(set.out.contains("HEAD_START") && set.out.contains("250ms"), "\(set.out)")
            #expect(try QueueSettingsTable.all(on: db).first?.priorityHeadStartMilliseconds == 250)
            #expect(fixture.run(["queue", "set", "webhooks", "--jitter", "none"]).status == 0)
            #expect(try queuesJSON(fixture).first?["priority_head_start_ms"] as? Int == 250, "another set keeps it")
            let cleared = fixture.run(["queue", "set", "webhooks", "--no-priority-head-start", "--json"])
            #expect(cleared.status == 0, "\(cleared)")
            #expect(try cleared.object()["priority_head_start_ms"] is NSNull)
            #expect(try QueueSettingsTable.all(on: db).first?.jitter == "none", "clearing it keeps the rest")
        }
    }

    @Test func aBaseLongerThanTheCapIsRefusedBeforeWorkersWouldIgnoreIt() throws {
        try ControlFixture.with { fixture throws in
            let db = fixture.db
            #expect(fixture.run(["queue", "set", "q", "--backoff-cap", "1m"]).status == 0)
            let result = fixture.run(["queue", "set", "q", "--backoff-base", "2m"])
            #expect(result.status == 2)
            #expect(result.err.contains("--backoff-base") && result.err.contains("nothing was changed"), "\(result.err)")
            #expect(try QueueSettingsTable.all(on: db) == [QueueSettingsTable.Settings(queue: "q", backoffCapMilliseconds: 60_000)])
        }
    }
}
