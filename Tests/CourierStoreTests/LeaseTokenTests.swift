import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The fence token (migration 0039, DESIGN.md invariant 2): every write about a lease is
/// matched by (id, lease token, worker), and the token never repeats, although the attempt
/// number does. Each test replays the interleaving found in review: a write commits (its
/// reply lost), the same worker claims the job again under the same attempt number, and the
/// acknowledgement writer re-sends the first write. It must change nothing.
@Suite struct LeaseTokenTests {
    let worker = UUID()
    let lease = 30_000

    func enqueueOne(_ db: PostgresConnection, deadline: Date? = nil) throws -> Int64 {
        try TestRows(db).job(url: "https://token.example.com/x") { $0.deadline = deadline }
    }

    func claimOne(_ db: PostgresConnection) throws -> ClaimedJob {
        let jobs = try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: lease, on: db)
        try #require(jobs.count == 1)
        return jobs[0]
    }

    /// (state, leased_by, lease token, attempt) of the job.
    func row(_ db: PostgresConnection, _ id: Int64) throws -> (state: String, worker: UUID?, lease: Int64, attempt: Int) {
        let r = try db.query("select state::text, leased_by, lease_seq, attempt from courier.jobs where id = \(id)").rows[0]
        return (try r.decode(0, as: String.self), try r.decode(1, as: UUID?.self), try r.decode(2, as: Int64.self),
                try r.decode(3, as: Int.self))
    }

    /// Claims the job again after `giveBack` returned it unattempted, then re-sends `giveBack`
    /// (as the Completer re-sends a batch whose reply was lost) and checks the new lease stands.
    func reclaimAndResend(_ db: PostgresConnection, _ id: Int64, giveBack: (ClaimedJob) throws -> [Int64]) throws {
        let first = try claimOne(db)
        #expect(first.id == id)
        #expect(try giveBack(first) == [id], "the first write lands")
        #expect(try row(db, id).state == "available")
        let second = try claimOne(db)
        #expect(second.id == id)
        #expect(second.attempt == first.attempt, "the attempt number repeats: it cannot be the fence")
        #expect(second.lease == first.lease + 1, "the token does not")
        #expect(try giveBack(first).isEmpty, "the re-sent write matches no lease")
        let now = try row(db, id)
        #expect(now.state == "running")
        #expect(now.worker == worker)
        #expect(now.lease == second.lease)
        // The current lease's own writes still land, and its renewal too.
        #expect(try JobsTable.renewLeases([(id, second.lease)], worker: worker, leaseMilliseconds: lease, on: db).renewed.map(\.id) == [id])
        #expect(try JobsTable.renewLeases([(id, first.lease)], worker: worker, leaseMilliseconds: lease, on: db).renewed.isEmpty,
                "a renewal under the old token proves nothing")
        #expect(try JobsTable.complete([.init(id: id, attempt: second.attempt, lease: second.lease, status: 200, durationMilliseconds: 1)],
                                       worker: worker, on: db) == [id])
    }

    @Test func aReSentHandBackCannotTakeTheJobFromItsNextLease() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try enqueueOne(db)
            try reclaimAndResend(db, id) { job in
                try JobsTable.handBack(ids: [job.id], leases: [job.lease], worker: worker, on: db)
            }
        }
    }

    @Test func aReSentUnattemptedRetryCannotTakeTheJobFromItsNextLease() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try enqueueOne(db, deadline: Date().addingTimeInterval(3600))
            try reclaimAndResend(db, id) { job in
                // A throttled answer of a job with a deadline gives its attempt back.
                try JobsTable.retry([.init(id: job.id, attempt: job.attempt, lease: job.lease, delayMilliseconds: 0,
                                           errorJSON: #"{"class":"throttled"}"#, usesAttempt: false)], worker: worker, on: db)
            }
        }
    }

    @Test func aReSentEarlyDeadlineDeadLetterCannotTakeTheJobFromItsNextLease() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // The worker's clock said the deadline passed; the database's says it is ahead, so
            // the job goes back unattempted, not to run before its deadline. The test moves
            // run_at back by hand so the job can be claimed again at once.
            let id = try enqueueOne(db, deadline: Date().addingTimeInterval(3600))
            try reclaimAndResend(db, id) { job in
                let back = try JobsTable.deadLetter([.init(id: job.id, attempt: job.attempt, lease: job.lease, reason: .deadline,
                                                           errorJSON: nil, lastClass: nil, lastStatus: nil)], worker: worker, on: db)
                try db.query("update courier.jobs set run_at = now() where id = \(job.id) and state = 'available'")
                return back
            }
            #expect(try db.query("select count(*)::int from courier.dead_letters").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func everyClaimPathBumpsTheToken() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let plain = try enqueueOne(db)
            let job = try claimOne(db)
            #expect(job.id == plain && job.lease == 1)
            _ = try JobsTable.handBack(ids: [job.id], leases: [job.lease], worker: worker, on: db)
            // The spread claim (courier.claim_take).
            let spread = try JobsTable.claimSpread(queue: "default", limit: 1, perDestination: 1, after: nil, excluding: [],
                                                   visit: 16, worker: worker, leaseMilliseconds: lease, on: db)
            #expect(spread.jobs.map(\.lease) == [2])
            _ = try JobsTable.handBack(ids: [plain], leases: [2], worker: worker, on: db)
            // The gated claim (through courier.claim_take too).
            _ = try DestinationsTable.merge(.init(destination: "https://token.example.com", maxInFlight: 5), on: db)
            try db.query("update courier.jobs set gated = true where id = \(plain)")
            let gated = try JobsTable.claimGated(queue: "default", limit: 1, worker: worker, leaseMilliseconds: lease, on: db)
            #expect(gated.map(\.lease) == [3])
            #expect(try row(db, plain).lease == 3)
        }
    }
}
