@testable import CourierControl
import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 17, "Finding and steering jobs": list pages and says when it cut, every state,
/// filters that normalise destinations, retry now, update, cancel by filter, and the
/// dead-letter side (truncation note, show by job id, replay --all and cancelled).
@Suite("jobctl finding and steering jobs")
struct SteeringCommandTests {
    let worker = UUID()

    func ids(_ outcome: JobctlOutcome) throws -> [Int64] {
        try outcome.array().compactMap { ($0["id"] as? NSNumber)?.int64Value }
    }

    /// Runs `job` through a fake worker to success (claim + acknowledge, as a worker does).
    func succeed(_ id: Int64, queue: String = "default", in fixture: ControlFixture) throws {
        let claimed = try JobsTable.claim(queue: queue, limit: 100, worker: worker, leaseMilliseconds: 60_000, on: fixture.db)
        let job = try #require(claimed.first { $0.id == id })
        try JobsTable.complete([.init(id: job.id, attempt: job.attempt, lease: job.lease, status: 200, durationMilliseconds: 12)],
                               worker: worker, on: fixture.db)
        // Hand the others back, so they stay waiting.
        for other in claimed where other.id != id {
            try TestRows(fixture.db).release(.id(other.id))
        }
    }

    @Test func listSaysWhenItCutsAndPagesWithAfter() throws {
        try ControlFixture.with { fixture throws in
            var all: [Int64] = []
            for n in 0..<7 { all.append(try fixture.enqueue("http://a.example.com/\(n)")) }
            let first = fixture.run(["list", "--limit", "3"])
            #expect(first.status == 0, "\(first)")
            #expect(first.out.contains("3 of 7 shown; next page: --after \(all[2])"), "\(first.out)")
            let json = fixture.run(["list", "--limit", "3", "--json"])
            #expect(try ids(json) == Array(all.prefix(3)), "the JSON stays an array")
            #expect(json.err.contains("note: 3 of 7 shown"), "\(json.err)")
            let second = fixture.run(["list", "--limit", "3", "--after", String(all[2]), "--json"])
            #expect(try ids(second) == Array(all[3..<6]))
            #expect(second.err.contains("3 of 4 shown"), "counts from the page on: \(second.err)")
            let last = fixture.run(["list", "--limit", "3", "--after", String(all[5]), "--json"])
            #expect(try ids(last) == [all[6]])
            #expect(last.err.isEmpty, "nothing cut, nothing said: \(last.err)")
            let uncut = fixture.run(["list"])
            #expect(!uncut.out.contains("shown"), "\(uncut.out)")
        }
    }

    @Test func countsStopAtTheCap() throws {
        try ControlFixture.with { fixture throws in
            for n in 0..<5 { try fixture.enqueue("http://a.example.com/\(n)") }
            let count = try JobsTable.count(JobsTable.Search(), cap: 3, on: fixture.db)
            #expect(count.capped)
            #expect(count.value == 3, "a capped count says 'more than the cap'")
            #expect(Jobctl.truncationNote(shown: 2, of: count, nextAfter: 9) == "2 of more than 3 shown; next page: --after 9")
            #expect(Jobctl.truncationNote(shown: 2, of: .init(counted: 2_146, cap: 10_000), nextAfter: nil) == "2 of 2,146 shown")
            #expect(Jobctl.grouped(1_234_567) == "1,234,567")
            #expect(Jobctl.grouped(999) == "999")
        }
    }

    @Test func nothingMatchedExitsThree() throws {
        try ControlFixture.with { fixture throws in
            try fixture.enqueue("http://a.example.com/1") { $0.queue = "qa" }
            let none = fixture.run(["list", "--queue", "nosuch"])
            #expect(none.status == 3, "\(none)")
            #expect(none.err.contains("no job matched"), "\(none.err)")
            let json = fixture.run(["list", "--queue", "nosuch", "--json"])
            #expect(json.status == 3)
            #expect(try ids(json) == [])
            let dead = fixture.run(["dead", "list", "--queue", "nosuch"])
            #expect(dead.status == 3, "\(dead)")
        }
    }

    @Test func listFindsEveryStateAndFiltersByKindURLAndTime() throws {
        try ControlFixture.with { fixture throws in
            let waiting = try fixture.enqueue("http://a.example.com/v1/one")
            let done = try fixture.enqueue("http://a.example.com/v2/two") { $0.priority = 7; $0.maxAttempts = 9 }
            try succeed(done, in: fixture)
            let cancelled = try fixture.enqueue("http://b.example.com/v2/three")
            _ = try JobsTable.cancel(ids: [cancelled], on: fixture.db)
            let custom = try fixture.db.query("select courier.enqueue_job('report.build', '{}')").rows[0].decode(0, as: Int64.self)

            #expect(try ids(fixture.run(["list", "--json"])) == [waiting, custom], "waiting and running by default")
            #expect(try ids(fixture.run(["list", "--state", "succeeded", "--json"])) == [done])
            #expect(try ids(fixture.run(["list", "--state", "dead", "--json"])) == [cancelled])
            #expect(try ids(fixture.run(["list", "--state", "all", "--json"])) == [waiting, done, cancelled, custom])
            #expect(try ids(fixture.run(["list", "--state", "succeeded", "--state", "dead", "--json"])) == [done, cancelled])
            #expect(try ids(fixture.run(["list", "--state", "all", "--kind", "report.build", "--json"])) == [custom])
            #expect(try ids(fixture.run(["list", "--state", "all", "--url-prefix", "http://a.example.com/v2/", "--json"])) == [done])
            #expect(try ids(fixture.run(["list", "--state", "all", "--url-prefix", "http://%", "--json"])) == [],
                    "the prefix is text, not a LIKE pattern")
            #expect(try ids(fixture.run(["list", "--state", "all", "--since", "-1h", "--until", "+1h", "--json"])).count == 4)
            #expect(try ids(fixture.run(["list", "--state", "all", "--until", "-1h", "--json"])) == [])
            let text = fixture.run(["list", "--state", "all"])
            #expect(text.out.contains("succeeded"), "\(text.out)")
            #expect(text.out.contains("dead"))
        }
    }

    @Test(arguments: ["127.0.0.1:8000", "http://127.0.0.1:8000/", "HTTP://127.0.0.1:8000", "http://127.0.0.1:8000"])
    func destinationFiltersNormaliseAsEnqueueDoes(_ written: String) throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue("http://127.0.0.1:8000/hook")
            try fixture.enqueue("http://127.0.0.1:8001/hook")
            let letter = try fixture.deadLetter(destination: "http://127.0.0.1:8000")
            #expect(try ids(fixture.run(["list", "--destination", written, "--json"])) == [id])
            let dead = fixture.run(["dead", "list", "--destination", written, "--json"])
            #expect(dead.status == 0, "\(dead)")
            #expect(try ids(dead) == [letter])
        }
    }

    @Test func aDestinationNothingUsesIsNamed() throws {
        try ControlFixture.with { fixture throws in
            try fixture.enqueue("http://127.0.0.1:8000/hook")
            let result = fixture.run(["dead", "list", "--destination", "127.0.0.1:9999"])
            #expect(result.status == 3, "\(result)")
            #expect(result.err.contains("no job, dead letter or breaker uses destination \"127.0.0.1:9999\""), "\(result.err)")
            #expect(result.err.contains("http://127.0.0.1:9999"), "says what it looked for: \(result.err)")
            // A destination in use but with nothing matching says nothing about the destination.
            let used = fixture.run(["dead", "list", "--destination", "127.0.0.1:8000"])
            #expect(used.status == 3)
            #expect(!used.err.contains("uses destination"), "\(used.err)")
        }
    }

    @Test func showOfASucceededJobInventsNothing() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue("http://a.example.com/ok") {
                $0.priority = 5
                $0.maxAttempts = 9
                $0.timeoutMilliseconds = 1234
                $0.headers = [("X-Trace", .literal("t"))]
            }
            try succeed(id, in: fixture)
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect(json["status"] as? String == "succeeded")
            for field in JobRecord.fieldsNotArchived {
                #expect(json[field] == nil, "\(field) is not archived, so it is left out: \(json)")
            }
            #expect((json["attempt"] as? NSNumber)?.intValue == 1)
            #expect((json["final_status"] as? NSNumber)?.intValue == 200)
            let listed = try #require(try fixture.run(["list", "--state", "succeeded", "--json"]).array().first)
            #expect(listed["priority"] == nil && listed["max_attempts"] == nil)
        }
    }

    @Test func showOfADeadJobNamesItsDeadLetterAndDeadShowTakesTheJobID() throws {
        try ControlFixture.with { fixture throws in
            // Make the ids differ: a few dead letters first, then the job.
            for _ in 0..<3 { try fixture.deadLetter() }
            try fixture.db.query("select setval(pg_get_serial_sequence('courier.jobs', 'id'), 100)")
            let id = try fixture.enqueue("http://a.example.com/x")
            _ = try JobsTable.cancel(ids: [id], on: fixture.db)
            let letter = try fixture.int("select id from courier.dead_letters where job_id = \(id)")
            #expect(Int64(letter) != id)

            let text = fixture.run(["show", String(id)])
            #expect(text.out.contains("dead letter:     \(letter) (jobctl dead show \(letter))"), "\(text.out)")
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect((json["dead_letter_id"] as? NSNumber)?.intValue == letter)

            let byJob = fixture.run(["dead", "show", "--job", String(id), "--json"])
            #expect(byJob.status == 0, "\(byJob)")
            #expect((try byJob.object()["id"] as? NSNumber)?.intValue == letter)
            // The job's id where no dead letter has it: found, with a note.
            let guessed = fixture.run(["dead", "show", String(id)])
            #expect(guessed.status == 0, "\(guessed)")
            #expect(guessed.out.contains("dead letter:     \(letter) (job \(id))"), "\(guessed.out)")
            #expect(guessed.err.contains("no dead letter has id \(id)"), "\(guessed.err)")
            #expect(fixture.run(["dead", "show", "--job", "999999"]).status == 3)
            #expect(fixture.run(["dead", "show", "999999"]).status == 3)
            #expect(fixture.run(["dead", "show"]).status == 2)
        }
    }

    @Test func retryRunsWaitingJobsNowWithoutAnAttempt() throws {
        try ControlFixture.with { fixture throws in
            let later = try fixture.enqueue("http://a.example.com/1") { $0.runAt = Date().addingTimeInterval(3600) }
            let backingOff = try fixture.enqueue("http://a.example.com/2")
            try TestRows(fixture.db).setAttempt(2, .id(backingOff))
            try TestRows(fixture.db).setRunAt(.id(backingOff), .seconds(600))
            let running = try fixture.enqueue("http://a.example.com/3") { $0.queue = "r" }
            _ = try JobsTable.claim(queue: "r", limit: 1, worker: worker, leaseMilliseconds: 60_000, on: fixture.db)

            let result = fixture.run(["retry", String(later), String(backingOff), String(running), "999999", "--json"])
            #expect(result.status == 0, "\(result)")
            let outcomes = try result.array().map { $0["outcome"] as? String }
            #expect(outcomes == ["updated", "updated", "running", "not_found"])
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id in (\(later), \(backingOff)) and run_at <= now()") == 2)
            #expect(try fixture.int("select attempt from courier.jobs where id = \(backingOff)") == 2, "no attempt used or reset")
            #expect(fixture.run(["retry", "999999"]).status == 3)
            #expect(fixture.run(["retry", String(running)]).status == 3, "running jobs are left alone")
        }
    }

    @Test func updateReschedulesAndReprioritises() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue("http://a.example.com/1")
            let moved = fixture.run(["update", String(id), "--run-at", "2030-01-02T03:04:05Z", "--priority", "-4"])
            #expect(moved.status == 0, "\(moved)")
            #expect(moved.out.contains("priority -4"))
            #expect(try fixture.int("select priority from courier.jobs where id = \(id)") == -4)
            #expect(try fixture.int("select extract(epoch from run_at)::bigint from courier.jobs where id = \(id)") == 1_893_553_445)
            let only = fixture.run(["update", String(id), "--priority", "3"])
            #expect(only.status == 0)
            #expect(try fixture.int("select extract(epoch from run_at)::bigint from courier.jobs where id = \(id)") == 1_893_553_445,
                    "what is not given stays")
            #expect(fixture.run(["update", String(id)]).status == 2, "something to change is required")
            #expect(fixture.run(["update", String(id), "--priority", "many"]).status == 2)
            #expect(fixture.run(["update", "999999", "--priority", "1"]).status == 3)
        }
    }

    @Test func cancelByFilterWithDryRun() throws {
        try ControlFixture.with { fixture throws in
            let a = try fixture.enqueue("https://old.example.com/1") { $0.queue = "imports" }
            let b = try fixture.enqueue("https://old.example.com/2") { $0.queue = "imports" }
            let other = try fixture.enqueue("https://new.example.com/1") { $0.queue = "imports" }
            let elsewhere = try fixture.enqueue("https://old.example.com/3") { $0.queue = "mail" }

            let dry = fixture.run(["cancel", "--queue", "imports", "--url-prefix", "https://old.example.com/", "--dry-run"])
            #expect(dry.status == 0, "\(dry)")
            #expect(dry.out.contains("2 jobs would be cancelled"), "\(dry.out)")
            #expect(try fixture.jobCount == 4, "a dry run changes nothing")

            let done = fixture.run(["cancel", "--queue", "imports", "--url-prefix", "https://old.example.com/", "--json"])
            #expect(done.status == 0, "\(done)")
            #expect((try done.object()["cancelled"] as? NSNumber)?.intValue == 2)
            #expect(Set(try fixture.db.query("select job_id from courier.dead_letters where reason = 'cancelled'").rows.map {
                try $0.decode(0, as: Int64.self)
            }) == [a, b])
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id in (\(other), \(elsewhere))") == 2)
            #expect(fixture.run(["cancel", "--queue", "imports", "--url-prefix", "https://old.example.com/"]).status == 3,
                    "nothing left to cancel")
            #expect(fixture.run(["cancel", "1", "--queue", "imports"]).status == 2, "ids or filters, not both")
            #expect(fixture.run(["cancel"]).status == 2)
        }
    }

    @Test func replayAllSkipsCancelledUnlessAsked() throws {
        try ControlFixture.with { fixture throws in
            let exhausted = try fixture.deadLetter(reason: "exhausted")
            let cancelled = try fixture.deadLetter(reason: "cancelled")
            let dry = try fixture.run(["dead", "replay", "--all", "--dry-run", "--json"]).object()
            #expect((dry["replayed"] as? NSNumber)?.intValue == 1)
            let replay = fixture.run(["dead", "replay", "--all"])
            #expect(replay.status == 0, "\(replay)")
            #expect(try fixture.replayedIDs() == [exhausted])
            let also = fixture.run(["dead", "replay", "--all", "--include-cancelled"])
            #expect(also.status == 0, "\(also)")
            #expect(try fixture.replayedIDs() == [exhausted, cancelled])
            #expect(fixture.run(["dead", "replay", "1", "--include-cancelled"]).status == 2)
        }
    }

    @Test func deadListSaysWhenItCuts() throws {
        try ControlFixture.with { fixture throws in
            for _ in 0..<4 { try fixture.deadLetter() }
            let text = fixture.run(["dead", "list", "--limit", "2"])
            #expect(text.status == 0, "\(text)")
            #expect(text.out.contains("2 of 4 shown"), "\(text.out)")
            let json = fixture.run(["dead", "list", "--limit", "2", "--json"])
            #expect(try json.array().count == 2)
            #expect(json.err.contains("2 of 4 shown"))
        }
    }
}
