import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct LeaseTests {
    let workerA = UUID()
    let workerB = UUID()

    func enqueue(_ db: PostgresConnection, _ n: Int, queue: String = "default", method: String = "POST",
                 key: Bool = true, url: String = "https://example.com/x") throws -> [Int64] {
        try TestRows(db).jobs(n, url: url) { r in
            r.queue = queue
            r.method = method
            if !key { r.idempotencyKey = .none }
        }
    }

    func state(_ db: PostgresConnection, _ id: Int64) throws -> (state: String, attempt: Int)? {
        guard let row = try db.query("select state, attempt from courier.jobs where id = \(id)").rows.first else { return nil }
        return (try row.decode(0, as: String.self), try row.decode(1, as: Int.self))
    }

    @Test func claimLeasesInPriorityThenRunAtOrderAndSkipsLockedRows() throws {
        try CourierTestDatabase.with { (database, db) throws in
            var low = EnqueueRequest(url: "https://example.com/low")
            low.priority = 5
            let lowID = try JobsTable.enqueue(low, on: db)
            var high = EnqueueRequest(url: "https://example.com/high")
            high.priority = -5
            let highID = try JobsTable.enqueue(high, on: db)
            var later = EnqueueRequest(url: "https://example.com/later")
            later.runAt = Date().addingTimeInterval(3600)
            _ = try JobsTable.enqueue(later, on: db)
            let other = try enqueue(db, 1, queue: "other")

            let first = try JobsTable.claim(queue: "default", limit: 1, worker: workerA, leaseMilliseconds: 30_000, on: db)
            #expect(first.map(\.id) == [highID])
            #expect(first[0].attempt == 1)

            // A second connection holding row locks: SKIP LOCKED passes over them.
            let blocker = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { blocker.close() }
            try blocker.simpleQuery("begin")
            try blocker.query("select id from courier.jobs where id = \(lowID) for update")
            let none = try JobsTable.claim(queue: "default", limit: 10, worker: workerB, leaseMilliseconds: 30_000, on: db)
            #expect(none.isEmpty, "the only due job is locked, the other is in the future")
            try blocker.simpleQuery("rollback")
            let second = try JobsTable.claim(queue: "default", limit: 10, worker: workerB, leaseMilliseconds: 30_000, on: db)
            #expect(second.map(\.id) == [lowID])
            #expect(try JobsTable.claim(queue: "other", limit: 10, worker: workerB, leaseMilliseconds: 30_000, on: db).map(\.id) == other)
        }
    }

    @Test func claimSkipsHeldBackDestinations() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let paused = try enqueue(db, 2, url: "https://paused.example.com/x")
            let open = try enqueue(db, 2, url: "https://open.example.com/x")
            let healthy = try enqueue(db, 2, url: "https://healthy.example.com/x")
            try BreakersTable.pause(destination: "https://paused.example.com:443", milliseconds: 60_000, on: db)
            try TestRows(db).breaker("https://open.example.com:443", state: .open, openUntil: .seconds(60))
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: workerA, leaseMilliseconds: 30_000, on: db)
            #expect(Set(claimed.map(\.id)) == Set(healthy))
            #expect(try paused.allSatisfy { try state(db, $0)?.attempt == 0 })
            #expect(try open.allSatisfy { try state(db, $0)?.attempt == 0 })
        }
    }

    @Test func withoutTheArchiveASuccessOnlyDeletesAndKeepsTheSameFence() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try enqueue(db, 2)
            _ = try JobsTable.claim(queue: "default", limit: 2, worker: workerA, leaseMilliseconds: 30_000, on: db)
            let success = JobsTable.Success(id: ids[0], attempt: 1, lease: 1, status: 200, durationMilliseconds: 5)
            #expect(try JobsTable.complete([success], worker: workerB, archive: false, on: db).isEmpty, "another worker's lease")
            #expect(try JobsTable.complete([.init(id: ids[0], attempt: 2, lease: 2, status: 200, durationMilliseconds: 5)], worker: workerA,
                                           archive: false, on: db).isEmpty, "another attempt")
            #expect(try JobsTable.complete([success], worker: workerA, archive: false, on: db) == [ids[0]])
            #expect(try state(db, ids[0]) == nil)
            #expect(try JobsTable.get(id: ids[0], on: db) == nil, "nothing is kept to show")
            #expect(try db.query("select count(*)::bigint from courier.completed_jobs").rows[0].decode(0, as: Int.self) == 0)
            #expect(try state(db, ids[1])?.state == "running", "only the acknowledged job left")
        }
    }

    @Test func acknowledgementsAreFencedByTheLease() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try enqueue(db, 3)
            let jobs = try JobsTable.claim(queue: "default", limit: 3, worker: workerA, leaseMilliseconds: 30_000, on: db)
            #expect(jobs.count == 3)
            // Wrong worker, wrong attempt: nothing changes.
            #expect(try JobsTable.complete([.init(id: ids[0], attempt: 1, lease: 1, status: 200, durationMilliseconds: 5)], worker: workerB, on: db).isEmpty)
            #expect(try JobsTable.complete([.init(id: ids[0], attempt: 2, lease: 2, status: 200, durationMilliseconds: 5)], worker: workerA, on: db).isEmpty)
            #expect(try state(db, ids[0])?.state == "running")
            // The right fence records success once; a repeat is a no-op.
            #expect(try JobsTable.complete([.init(id: ids[0], attempt: 1, lease: 1, status: 201, durationMilliseconds: 5)], worker: workerA, on: db) == [ids[0]])
            #expect(try JobsTable.complete([.init(id: ids[0], attempt: 1, lease: 1, status: 201, durationMilliseconds: 5)], worker: workerA, on: db).isEmpty)
            #expect(try state(db, ids[0]) == nil)
            let shown = try JobsTable.get(id: ids[0], on: db)
            #expect(shown?.status == .succeeded)
            #expect(shown?.finalStatus == 201)

            let error = #"{"attempt":1,"class":"server","status":500,"message":"HTTP 500"}"#
            #expect(try JobsTable.retry([.init(id: ids[1], attempt: 1, lease: 1, delayMilliseconds: 60_000, errorJSON: error)], worker: workerA, on: db) == [ids[1]])
            let retried = try JobsTable.get(id: ids[1], on: db)
            #expect(retried?.status == .available)
            #expect(retried?.errors.map(\.errorClass) == ["server"])
            #expect((retried?.runAt ?? .distantPast) > Date().addingTimeInterval(50))

            #expect(try JobsTable.deadLetter([.init(id: ids[2], attempt: 1, lease: 1, reason: .permanent, errorJSON: error, lastClass: .client, lastStatus: 404)], worker: workerA, on: db) == [ids[2]])
            let dead = try JobsTable.get(id: ids[2], on: db)
            #expect(dead?.status == .dead)
            #expect(dead?.deadReason == "permanent")
            #expect(dead?.errors.count == 1)
        }
    }

    @Test func aLateAckAfterRescueChangesNothing() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try enqueue(db, 1)[0]
            _ = try JobsTable.claim(queue: "default", limit: 1, worker: workerA, leaseMilliseconds: 30_000, on: db)
            // Judged 31 s from now, the 30 s lease has expired: no row is rewritten to move time.
            #expect(try JobsTable.rescueExpired(on: db) == .init(requeued: 0, deadLettered: 0, ranHere: true))
            let rescued = try JobsTable.rescueExpired(now: Date().addingTimeInterval(31), on: db)
            #expect(rescued == .init(requeued: 1, deadLettered: 0, ranHere: true))
            let reclaimed = try JobsTable.claim(queue: "default", limit: 1, worker: workerB, leaseMilliseconds: 30_000, on: db)
            #expect(reclaimed.first?.attempt == 2)
            // Worker A comes back from its pause and reports success for attempt 1.
            #expect(try JobsTable.complete([.init(id: id, attempt: 1, lease: 1, status: 200, durationMilliseconds: 1)], worker: workerA, on: db).isEmpty)
            #expect(try JobsTable.retry([.init(id: id, attempt: 1, lease: 1, delayMilliseconds: 0, errorJSON: "{}")], worker: workerA, on: db).isEmpty)
            #expect(try JobsTable.deadLetter([.init(id: id, attempt: 1, lease: 1, reason: .permanent, errorJSON: nil, lastClass: nil, lastStatus: nil)], worker: workerA, on: db).isEmpty)
            #expect(try state(db, id)! == ("running", 2))
            let history = try JobsTable.get(id: id, on: db)?.errors ?? []
            #expect(history.map(\.errorClass) == ["lease_expired"])
        }
    }

    @Test func rescueDeadLettersJobsThatAreNotSafeToRepeatOrOutOfAttempts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let unsafe = try enqueue(db, 1, key: false)[0]
            let safeGet = try enqueue(db, 1, method: "GET", key: false)[0]
            var last = EnqueueRequest(url: "https://example.com/x")
            last.maxAttempts = 1
            let exhausted = try JobsTable.enqueue(last, on: db)
            _ = try JobsTable.claim(queue: "default", limit: 10, worker: workerA, leaseMilliseconds: 30_000, on: db)
            let result = try JobsTable.rescueExpired(now: Date().addingTimeInterval(31), on: db)
            #expect(result.requeued == 1)
            #expect(result.deadLettered == 2)
            #expect(try JobsTable.get(id: unsafe, on: db)?.deadReason == "ambiguous")
            #expect(try JobsTable.get(id: exhausted, on: db)?.deadReason == "exhausted")
            #expect(try state(db, safeGet)?.state == "available")
        }
    }

    @Test func onlyOneRescuerRunsAtATime() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let other = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { other.close() }
            try other.simpleQuery("begin")
            try other.query("select pg_advisory_xact_lock(\(Int64(0x6375_7272_6573_6375)))")
            #expect(try JobsTable.rescueExpired(on: db).ranHere == false)
            try other.simpleQuery("commit")
            #expect(try JobsTable.rescueExpired(on: db).ranHere == true)
        }
    }

    @Test func handBackReturnsTheAttempt() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try enqueue(db, 1)[0]
            let job = try JobsTable.claim(queue: "default", limit: 1, worker: workerA, leaseMilliseconds: 30_000, on: db)[0]
            #expect(try JobsTable.handBack(ids: [id], leases: [job.lease], worker: workerA, on: db) == [id])
            #expect(try state(db, id)! == ("available", 0))
        }
    }

    @Test func leasesRenewAndReportCancellation() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try enqueue(db, 2)
            let jobs = try JobsTable.claim(queue: "default", limit: 2, worker: workerA, leaseMilliseconds: 1_000, on: db)
            let leases = jobs.map { (id: $0.id, lease: $0.lease) }
            let outcomes = try JobsTable.cancel(ids: [ids[0]], on: db)
            #expect(outcomes.first?.outcome == .cancelRequested)
            let renewal = try JobsTable.renewLeases(leases, worker: workerA, leaseMilliseconds: 60_000, on: db)
            #expect(renewal.cancelled == [ids[0]])
            let left = try db.query("select min(lease_expires_at - now()) > interval '50 seconds' from courier.jobs").rows[0].decode(0, as: Bool.self)
            #expect(left)
            #expect(try JobsTable.renewLeases(leases, worker: workerB, leaseMilliseconds: 60_000, on: db).renewed.isEmpty)
            #expect(try JobsTable.cancelRequested(worker: workerA, on: db) == [ids[0]])
        }
    }

    @Test func cancelMovesWaitingJobsToDeadLetters() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try enqueue(db, 2)
            let outcomes = try JobsTable.cancel(ids: [ids[0], 999_999], on: db)
            #expect(outcomes.map(\.outcome) == [.cancelled, .notFound])
            #expect(try JobsTable.get(id: ids[0], on: db)?.deadReason == "cancelled")
            #expect(try state(db, ids[1])?.state == "available")
        }
    }
}
