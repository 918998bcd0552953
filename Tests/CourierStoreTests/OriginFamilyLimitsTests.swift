import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// An origin's limits cover every sub-key under it (sql/0043; issue 43, item 3): its cap
/// counts the family's running jobs, its token bucket and retry budget are spent by all of
/// them, a sub-key's own limits hold within its origin's, and no sub-key leaves its origin's
/// limits by having been declared before them, never declared, or reset.
@Suite struct OriginFamilyLimitsTests {
    let lease = 30_000
    let origin = "http://family.test:80"

    func count(_ db: PostgresConnection, _ sql: PostgresQuery) throws -> Int {
        try db.query(sql).rows[0].decode(0, as: Int.self)
    }

    /// Runs the keeper until nothing is left to move.
    func keep(_ db: PostgresConnection) throws {
        while try JobsTable.trafficMaintain(batch: 2000, on: db) >= 2000 {}
    }

    func jobs(_ n: Int, key: String, on db: PostgresConnection) throws {
        try TestRows(db).bulkJobs(n, url: "http://family.test/x") { $0.destination = key }
    }

    func claimGated(_ db: PostgresConnection, limit: Int = 100) throws -> [ClaimedJob] {
        try JobsTable.claimGated(queue: "default", limit: limit, worker: UUID(), leaseMilliseconds: lease, on: db)
    }

    /// The attack: an operator capped the partner at 4 in flight, and jobs filed under its
    /// declared sub-keys went out on top of that cap. Six claimers race; the family's running
    /// count, read after every claim, never passes 4, and the sub-key with a cap of its own
    /// (2) never passes that.
    @Test func anOriginsCapCountsItsSubKeysAcrossRacingClaimers() throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = try DestinationsTable.merge(.init(destination: origin, maxInFlight: 4), on: db)
            _ = try DestinationsTable.merge(.init(destination: origin + "/a", signingSecret: "A"), on: db)
            _ = try DestinationsTable.merge(.init(destination: origin + "/b", maxInFlight: 2), on: db)
            for key in [origin, origin + "/a", origin + "/b"] { try jobs(60, key: key, on: db) }
            try keep(db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 180,
                    "a sub-key without limits of its own is gated under its limited origin")

            let peakFamily = Shared(0)
            let peakB = Shared(0)
            let claimed = Shared(0)
            let keys = Shared<Set<String>>([])
            let failures = Shared<[String]>([])
            let done = DispatchGroup()
            for _ in 0..<6 {
                done.enter()
                Thread {
                    defer { done.leave() }
                    do {
                        let conn = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                        defer { conn.close() }
                        let worker = UUID()
                        for _ in 0..<60 {
                            let got = try JobsTable.claimGated(queue: "default", limit: 5, worker: worker, leaseMilliseconds: 30_000, on: conn)
                            let row = try conn.query("""
                                select count(*)::bigint,
                                       count(*) filter (where destination = 'http://family.test:80/b')::bigint
                                from courier.jobs where state = 'running' and destination like 'http://family.test:80%'
                                """).rows[0]
                            let family = try row.decode(0, as: Int.self)
                            let b = try row.decode(1, as: Int.self)
                            peakFamily.withLock { $0 = max($0, family) }
                            peakB.withLock { $0 = max($0, b) }
                            claimed.withLock { $0 += got.count }
                            keys.withLock { $0.formUnion(got.map(\.destination)) }
                            if !got.isEmpty {
                                try JobsTable.complete(got.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                                       worker: worker, on: conn)
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }.start()
            }
            done.wait()
            #expect(failures.value.isEmpty, "\(failures.value)")
            #expect(peakFamily.value <= 4, "the family had \(peakFamily.value) in flight, above its origin's cap of 4")
            #expect(peakB.value <= 2, "the sub-key with its own cap of 2 had \(peakB.value) in flight")
            #expect(claimed.value > 8, "claimers made progress (claimed \(claimed.value))")
            #expect(keys.value == [origin, origin + "/a", origin + "/b"], "every key of the family got its turn")
        }
    }

    /// The origin's burst of 3 is all the family gets, whichever keys spend it.
    @Test func anOriginsTokenBucketIsSpentByEveryKeyOfItsFamily() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // One token every 1,000 s: nothing refills while the test runs.
            _ = try DestinationsTable.merge(.init(destination: origin, ratePerSecond: 0.001, burst: 3), on: db)
            _ = try DestinationsTable.merge(.init(destination: origin + "/a", signingSecret: "A"), on: db)
            _ = try DestinationsTable.merge(.init(destination: origin + "/b", signingSecret: "B"), on: db)
            for key in [origin + "/a", origin + "/b"] { try jobs(10, key: key, on: db) }
            try keep(db)
            var started = 0
            for _ in 0..<5 { started += try claimGated(db).count }
            #expect(started == 3, "the family started \(started) requests on a burst of 3")
            #expect(try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty,
                    "the plain claim leaves the family alone")
            // The origin's own job finds the bucket empty too.
            try jobs(1, key: origin, on: db)
            #expect(try claimGated(db).isEmpty)
        }
    }

    /// The origin's retry budget (at least 3 retries a window) counts its sub-keys' retries.
    @Test func anOriginsRetryBudgetCountsItsSubKeysRetries() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try DestinationsTable.merge(.init(destination: origin, retryBudgetPercent: 0), on: db)
            _ = try DestinationsTable.merge(.init(destination: origin + "/a", signingSecret: "A"), on: db)
            try jobs(10, key: origin + "/a", on: db)
            try TestRows(db).setAttempt(1, .destination(origin + "/a"))
            try keep(db)
            var retried = 0
            for _ in 0..<4 { retried += try claimGated(db).filter { $0.attempt > 1 }.count }
            #expect(retried == 3, "\(retried) retries started; the origin's budget allows the floor of 3")
            let deferred = try count(db, "select retries_deferred from courier.destinations where destination = 'http://family.test:80/a'")
            #expect(deferred >= 1, "the sub-key's retries left waiting are counted as deferred")
        }
    }

    /// Limits given to an origin after its sub-key was declared (and its jobs enqueued) reach
    /// them; taking the limits away frees them again.
    @Test func limitsGivenToAnOriginLaterReachItsDeclaredSubKeysAndGoWithTheirReset() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try DestinationsTable.merge(.init(destination: origin + "/a", signingSecret: "A"), on: db)
            try jobs(10, key: origin + "/a", on: db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 0)

            _ = try DestinationsTable.merge(.init(destination: origin, maxInFlight: 1), on: db)
            #expect(try count(db, """
                select count(*)::bigint from courier.destinations where destination = 'http://family.test:80/a' and gated and origin_limited
                """) == 1)
            // Not yet moved by the keeper: the plain claim passes over them all the same.
            #expect(try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            try keep(db)
            #expect(try claimGated(db).count == 1)
            #expect(try claimGated(db).isEmpty, "the origin's cap of 1 holds its sub-key")

            #expect(try DestinationsTable.remove(destination: origin, on: db))
            #expect(try count(db, """
                select count(*)::bigint from courier.destinations where destination = 'http://family.test:80/a' and not gated
                """) == 1)
            try keep(db)
            #expect(try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db).count == 9)
        }
    }

    /// A job to a sub-key nobody declared (only an operator's role can enqueue one) declares
    /// it, under its origin's limits; resetting a sub-key whose jobs still wait keeps it a
    /// fresh row, still under them.
    @Test func noSubKeyLeavesItsOriginsLimitsByHavingNoRow() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try DestinationsTable.merge(.init(destination: origin, maxInFlight: 1), on: db)
            try jobs(5, key: origin + "/undeclared", on: db)
            #expect(try count(db, """
                select count(*)::bigint from courier.destinations where destination = 'http://family.test:80/undeclared' and gated
                """) == 1, "the job declared its sub-key")
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 5, "gated as it was inserted")
            #expect(try claimGated(db).count == 1)
            #expect(try claimGated(db).isEmpty)

            _ = try DestinationsTable.merge(.init(destination: origin + "/own", maxInFlight: 50), on: db)
            try jobs(5, key: origin + "/own", on: db)
            #expect(try DestinationsTable.remove(destination: origin + "/own", on: db))
            let row = try db.query("""
                select max_in_flight, gated from courier.destinations where destination = 'http://family.test:80/own'
                """).rows
            #expect(row.count == 1, "a sub-key with waiting jobs keeps a row")
            #expect(try row.first?.decode(0, as: Int?.self) == nil, "a fresh one: its own cap is gone")
            #expect(try row.first?.decode(1, as: Bool.self) == true, "still under its origin's limits")
            try keep(db)
            #expect(try claimGated(db).isEmpty, "the origin's one slot is taken")

            // An origin's own key, and a sub-key with nothing waiting, are simply removed.
            #expect(try DestinationsTable.remove(destination: origin + "/none-waiting", on: db) == false)
            _ = try DestinationsTable.merge(.init(destination: origin + "/idle", maxInFlight: 3), on: db)
            #expect(try DestinationsTable.remove(destination: origin + "/idle", on: db))
            #expect(try count(db, """
                select count(*)::bigint from courier.destinations where destination = 'http://family.test:80/idle'
                """) == 0)
        }
    }
}
