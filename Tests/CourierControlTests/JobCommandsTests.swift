import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl list`, `show`, `cancel`, `stats` and `workers` against real jobs.
@Suite("jobctl list, show, cancel, stats, workers")
struct JobCommandsTests {
    let worker = UUID()

    /// Leases the job with `id` (it must be the next one on its queue).
    func lease(_ id: Int64, queue: String = "default", in fixture: ControlFixture) throws -> ClaimedJob {
        let claimed = try JobsTable.claim(queue: queue, limit: 1, worker: worker, leaseMilliseconds: 60_000, on: fixture.db)
        let job = try #require(claimed.first)
        try #require(job.id == id, "claimed \(job.id), expected \(id)")
        return job
    }

    func ids(_ outcome: JobctlOutcome) throws -> [Int64] {
        try outcome.array().compactMap { ($0["id"] as? NSNumber)?.int64Value }
    }

    @Test func listFiltersByStateQueueAndDestination() throws {
        try ControlFixture.with { fixture throws in
            let a1 = try fixture.enqueue("http://a.example.com/1") { $0.queue = "qa" }
            let a2 = try fixture.enqueue("http://a.example.com/2") { $0.queue = "qa" }
            let b1 = try fixture.enqueue("http://b.example.com/1") { $0.queue = "qb" }
            _ = try lease(a1, queue: "qa", in: fixture)

            #expect(try ids(fixture.run(["list", "--json"])) == [a1, a2, b1])
            #expect(try ids(fixture.run(["list", "--queue", "qa", "--json"])) == [a1, a2])
            #expect(try ids(fixture.run(["list", "--state", "running", "--json"])) == [a1])
            #expect(try ids(fixture.run(["list", "--state", "available", "--queue", "qa", "--json"])) == [a2])
            #expect(try ids(fixture.run(["list", "--destination", "http://b.example.com:80", "--json"])) == [b1])
            #expect(try ids(fixture.run(["list", "--limit", "2", "--json"])) == [a1, a2])
            #expect(try ids(fixture.run(["list", "--queue", "nothing-here", "--json"])) == [])

            let first = try #require(try fixture.run(["list", "--json"]).array().first)
            #expect(first["status"] as? String == "running")
            #expect(first["queue"] as? String == "qa")
            #expect(first["url"] as? String == "http://a.example.com/1")

            let text = fixture.run(["list", "--queue", "qb"])
            #expect(text.status == 0)
            #expect(text.out.hasPrefix("ID"), "\(text.out)")
            #expect(text.out.contains("http://b.example.com/1"))
        }
    }

    @Test(arguments: [(["list", "--state", "done"], "--state"), (["list", "--limit", "0"], "--limit"),
                      (["list", "--limit", "many"], "--limit")])
    func listRefusesBadFilters(_ arguments: [String], _ flag: String) throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains(flag), "\(result.err)")
        }
    }

    @Test func showAWaitingJob() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue("https://api.example.com/hook") {
                $0.headers = [("Authorization", .literal("Bearer s3cr3t")), ("X-Trace", .literal("t1"))]
                $0.idempotencyKey = .custom("key-7")
            }
            let text = fixture.run(["show", String(id)])
            #expect(text.status == 0, "\(text)")
            #expect(text.out.contains("status:          available"))
            #expect(text.out.contains("request:         POST https://api.example.com/hook"))
            #expect(text.out.contains("idempotency key: key-7"))
            #expect(text.out.contains("X-Trace: t1"))
            #expect(!text.out.contains("s3cr3t"), "secrets stay secret")
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect((json["id"] as? NSNumber)?.int64Value == id)
            #expect(json["status"] as? String == "available")
            #expect(json["destination"] as? String == "https://api.example.com:443")
        }
    }

    @Test func showARunningJob() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue()
            _ = try lease(id, in: fixture)
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect(json["status"] as? String == "running")
            #expect(json["leased_by"] as? String == worker.uuidString.lowercased())
            #expect((json["attempt"] as? NSNumber)?.intValue == 1)
            #expect(fixture.run(["show", String(id)]).out.contains("leased by:"))
        }
    }

    @Test func showASucceededJob() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue()
            let job = try lease(id, in: fixture)
            #expect(try JobsTable.complete([.init(id: id, attempt: job.attempt, lease: job.lease, status: 201, durationMilliseconds: 12)],
                                           worker: worker, on: fixture.db) == [id])
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect(json["status"] as? String == "succeeded")
            #expect((json["final_status"] as? NSNumber)?.intValue == 201)
            #expect((json["duration_ms"] as? NSNumber)?.intValue == 12)
            let text = fixture.run(["show", String(id)])
            #expect(text.out.contains("status:          succeeded"))
            #expect(text.out.contains("final status:    201"))
        }
    }

    @Test func showADeadJobWithItsAttempts() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue { $0.maxAttempts = 2 }
            let first = try lease(id, in: fixture)
            let retryError = #"{"attempt": 1, "class": "server", "status": 503, "message": "HTTP 503", "duration_ms": 5}"#
            #expect(try JobsTable.retry([.init(id: id, attempt: first.attempt, lease: first.lease, delayMilliseconds: 0, errorJSON: retryError)],
                                        worker: worker, on: fixture.db) == [id])
            let second = try lease(id, in: fixture)
            let lastError = #"{"attempt": 2, "class": "server", "status": 500, "message": "HTTP 500", "duration_ms": 7}"#
            #expect(try JobsTable.deadLetter([.init(id: id, attempt: second.attempt, lease: second.lease, reason: .exhausted, errorJSON: lastError,
                                                    lastClass: .server, lastStatus: 500)], worker: worker, on: fixture.db) == [id])
            #expect(try fixture.jobCount == 0)

            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect(json["status"] as? String == "dead")
            #expect(json["dead_reason"] as? String == "exhausted")
            let errors = try #require(json["errors"] as? [[String: Any]])
            #expect(errors.map { ($0["status"] as? NSNumber)?.intValue } == [503, 500])
            let text = fixture.run(["show", String(id)])
            #expect(text.out.contains("status:          dead (exhausted)"), "\(text.out)")
            #expect(text.out.contains("#1 server 503 5ms"), "\(text.out)")
            #expect(text.out.contains("#2 server 500 7ms"), "\(text.out)")
        }
    }

    @Test func showUnknownOrMalformedID() throws {
        try ControlFixture.with { fixture throws in
            let unknown = fixture.run(["show", "987654"])
            #expect(unknown.status == 3, "\(unknown)")
            #expect(unknown.err.contains("987654"))
            let malformed = fixture.run(["show", "abc"])
            #expect(malformed.status == 2, "\(malformed)")
            #expect(malformed.err.contains("ID"))
        }
    }

    @Test func cancelAWaitingJobMakesACancelledDeadLetter() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue { $0.queue = "q" }
            let keep = try fixture.enqueue { $0.queue = "q" }
            let result = fixture.run(["cancel", String(id)])
            #expect(result.status == 0, "\(result)")
            #expect(result.out == "\(id): cancelled\n")
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id = \(id)") == 0)
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id = \(keep)") == 1)
            #expect(try fixture.int("""
                select count(*)::bigint from courier.dead_letters
                where job_id = \(id) and reason = 'cancelled' and queue = 'q' and replayed_at is null
                """) == 1)
            #expect(try fixture.run(["show", String(id), "--json"]).object()["dead_reason"] as? String == "cancelled")
        }
    }

    @Test func cancelARunningJobAsksItsWorker() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.enqueue()
            _ = try lease(id, in: fixture)
            let result = fixture.run(["cancel", String(id), "--json"])
            #expect(result.status == 0, "\(result)")
            let outcome = try #require(try result.array().first)
            #expect((outcome["id"] as? NSNumber)?.int64Value == id)
            #expect(outcome["outcome"] as? String == "cancel_requested")
            #expect(try JobsTable.cancelRequested(worker: worker, on: fixture.db) == [id])
        }
    }

    @Test func cancelUnknownExits3AndAMixIsFine() throws {
        try ControlFixture.with { fixture throws in
            let unknown = fixture.run(["cancel", "424242"])
            #expect(unknown.status == 3, "\(unknown)")
            #expect(unknown.out.contains("424242: no waiting or running job"))
            let id = try fixture.enqueue()
            let mixed = fixture.run(["cancel", String(id), "424242", "--json"])
            #expect(mixed.status == 0, "\(mixed)")
            #expect(try mixed.array().map { $0["outcome"] as? String } == ["cancelled", "not_found"])
            let malformed = fixture.run(["cancel", "-5"])
            #expect(malformed.status == 2, "\(malformed)")
        }
    }

    @Test func statsShowsQueueDepths() throws {
        try ControlFixture.with { fixture throws in
            for _ in 0..<3 { try fixture.enqueue { $0.queue = "mail" } }
            let leased = try fixture.enqueue { $0.queue = "sync" }
            try fixture.enqueue { $0.queue = "sync" }
            _ = try lease(leased, queue: "sync", in: fixture)
            try fixture.deadLetter(reason: "exhausted")
            try fixture.deadLetter(reason: "permanent", replayed: true)

            let json = try fixture.run(["stats", "--json"]).object()
            let queues = try #require(json["queues"] as? [[String: Any]])
            var depth: [String: Int] = [:]
            for q in queues {
                depth["\(q["queue"] as? String ?? "?")/\(q["state"] as? String ?? "?")"] = (q["count"] as? NSNumber)?.intValue
            }
            #expect(depth == ["mail/available": 3, "sync/available": 1, "sync/running": 1])
            #expect((json["dead_letters"] as? [String: Any])?.mapValues { ($0 as? NSNumber)?.intValue } == ["exhausted": 1])
            #expect((json["workers"] as? NSNumber)?.intValue == 0)

            let text = fixture.run(["stats"])
            #expect(text.status == 0, "\(text)")
            #expect(text.out.contains("mail"))
            #expect(text.out.contains("dead letters (not replayed): exhausted=1"))
        }
    }

    @Test func workersListsLiveWorkersAndTheirJobs() throws {
        try ControlFixture.with { fixture throws in
            #expect(try fixture.run(["workers", "--json"]).array().isEmpty)
            try WorkersTable.register(.init(id: worker, host: "host-a", pid: 4242, queues: ["default", "mail"], concurrency: 8,
                                            version: "test", heartbeatIntervalMilliseconds: 600_000), on: fixture.db)
            let id = try fixture.enqueue()
            _ = try lease(id, in: fixture)
            let listed = try #require(try fixture.run(["workers", "--json"]).array().first)
            #expect(listed["host"] as? String == "host-a")
            #expect((listed["pid"] as? NSNumber)?.intValue == 4242)
            #expect((listed["jobs"] as? [NSNumber])?.map(\.int64Value) == [id])
            let text = fixture.run(["workers"])
            #expect(text.out.contains("host-a"))
            #expect(text.out.contains("default,mail"))
        }
    }

    @Test func unreachableDatabaseExits1ForEveryReadingCommand() {
        for arguments in [["list"], ["show", "1"], ["cancel", "1"], ["stats"], ["workers"], ["dead", "list"],
                          ["dead", "show", "1"], ["dead", "replay", "--all"], ["dead", "purge", "1"], ["breakers"]] {
            let result = jobctl(arguments, databaseURL: unreachableDatabaseURL)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.err.contains("cannot connect"), "\(arguments): \(result)")
        }
    }
}
