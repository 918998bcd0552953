import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The fair claim over fairness keys (sql/0045, `courier.claim_fair`; issue 42): weighted
/// shares, no starvation behind a flood, no catch-up burst after idling, caps that racing
/// claimers never pass, and the plain claim leaving keyed jobs to it.
@Suite struct FairClaimTests {
    let lease = 30_000
    let quantum = 4
    /// Where each key's last claim stopped (``claim(_:limit:cursor:worker:complete:)`` keeps them).
    let bounds = Shared<[String: ClaimPosition]>([:])

    func jobs(_ n: Int, key: String?, priority: Int = 0, on db: PostgresConnection) throws {
        try TestRows(db).bulkJobs(n, url: "http://fair.test/x") {
            $0.fairnessKey = key
            $0.priority = priority
        }
    }

    /// Claims `limit` jobs from `cursor`, completing them at once, and moves the cursor on; the
    /// bounds the claim returns are passed to the next one, as a worker does.
    @discardableResult
    func claim(_ db: PostgresConnection, limit: Int, cursor: inout JobsTable.FairCursor, worker: UUID = UUID(),
               complete: Bool = true) throws -> [ClaimedJob] {
        let round = try JobsTable.claimFair(queue: "default", limit: limit, cursor: cursor, quantum: quantum, visit: 64,
                                            bounds: bounds.value, worker: worker, leaseMilliseconds: lease, on: db)
        cursor = round.cursor
        bounds.withLock { $0.merge(round.last) { _, new in new } }
        if complete, !round.jobs.isEmpty {
            _ = try JobsTable.complete(round.jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200,
                                                               durationMilliseconds: 1) }, worker: worker, on: db)
        }
        return round.jobs
    }

    /// The archive keeps no key: read each job's key before it is claimed.
    func keyByID(_ db: PostgresConnection) throws -> [Int64: String] {
        var map: [Int64: String] = [:]
        for row in try db.query("select id, coalesce(fairness_key, '') from courier.jobs").rows {
            map[try row.decode(0, as: Int64.self)] = try row.decode(1, as: String.self)
        }
        return map
    }

    /// Weights 1 : 2 : 4 under full load give 1/7, 2/7 and 4/7 of the starts, across calls
    /// whose limits cut rounds anywhere (the cursor carries what is left of a key's quantum).
    @Test func weightsOneTwoFourShareTheStartsOneSeventhTwoSeventhsFourSevenths() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try TenantsTable.set("w2", weight: 2, maxInFlight: nil, on: db)
            _ = try TenantsTable.set("w4", weight: 4, maxInFlight: nil, on: db)
            for key in ["w1", "w2", "w4"] { try jobs(400, key: key, on: db) }
            let keyOf = try keyByID(db)
            var cursor = JobsTable.FairCursor.start
            var counts: [String: Int] = [:]
            // 10 rounds of 28 jobs, claimed 13 at a time: no call ends where a round does.
            var claimed = 0
            while claimed < 280 {
                let got = try claim(db, limit: min(13, 280 - claimed), cursor: &cursor)
                #expect(!got.isEmpty)
                for job in got { counts[keyOf[job.id]!, default: 0] += 1 }
                claimed += got.count
            }
            #expect(counts == ["w1": 40, "w2": 80, "w4": 160], "\(counts)")
        }
    }

    /// A key with one job behind another key's 5,000 is reached in the next call, not after the flood.
    @Test func aTrickleKeysJobIsNotStuckBehindAFloodKeysBacklog() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(5000, key: "flood", on: db)
            var cursor = JobsTable.FairCursor.start
            // The flood alone drains in large visits (it is the only key with due jobs).
            let first = try claim(db, limit: 200, cursor: &cursor)
            #expect(first.count == 200)
            try jobs(1, key: "trickle", on: db)
            let trickleID = try db.query("select id from courier.jobs where fairness_key = 'trickle'").rows[0].decode(0, as: Int64.self)
            var reached = false
            for _ in 0..<2 where !reached {
                reached = try claim(db, limit: 200, cursor: &cursor).contains { $0.id == trickleID }
            }
            #expect(reached, "the trickle's job was claimed within two claims of 200 behind 4,800 flood jobs")
        }
    }

    /// The default key (jobs without one) is one key of weight 1 among the others.
    @Test func jobsWithoutAKeyShareTheDefaultKeyAtWeightOne() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(100, key: nil, on: db)
            try jobs(100, key: "tenant", on: db)
            let keyOf = try keyByID(db)
            var cursor = JobsTable.FairCursor.start
            var counts: [String: Int] = [:]
            for _ in 0..<5 {
                for job in try claim(db, limit: 8, cursor: &cursor) { counts[keyOf[job.id]!, default: 0] += 1 }
            }
            #expect(counts == ["": 20, "tenant": 20], "\(counts)")
            #expect(try JobsTable.claim(queue: "default", limit: 1000, worker: UUID(), leaseMilliseconds: lease, on: db)
                .allSatisfy { keyOf[$0.id] == "" }, "the plain claim takes only jobs without a key")
        }
    }

    /// A key that was idle gets one quantum when it comes back, not the starts it missed.
    @Test func aKeyBackFromIdleGetsItsShareAndNoCatchUpBurst() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(2000, key: "busy", on: db)
            var cursor = JobsTable.FairCursor.start
            for _ in 0..<5 { try claim(db, limit: 100, cursor: &cursor) }
            try jobs(100, key: "late", on: db)
            let keyOf = try keyByID(db)
            var counts: [String: Int] = [:]
            for _ in 0..<4 {
                for job in try claim(db, limit: 8, cursor: &cursor) { counts[keyOf[job.id]!, default: 0] += 1 }
            }
            #expect(counts["late"] == 16 && counts["busy"] == 16, "equal weights share equally at once: \(counts)")
        }
    }

    /// A job behind a key's bound (handed back after later ones were claimed) is not lost:
    /// when the claim after the bound comes back short, the key is read from its start.
    @Test func aJobBehindTheBoundIsClaimedWhenTheBoundedScanComesBackShort() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(10, key: "k", on: db)
            var cursor = JobsTable.FairCursor.start
            let worker = UUID()
            let first = try claim(db, limit: 2, cursor: &cursor, worker: worker, complete: false)
            #expect(first.count == 2)
            _ = try claim(db, limit: 4, cursor: &cursor)
            #expect(bounds.value["k"] != nil, "the claim says where the key stopped")
            // The first two go back unattempted: they sit before the bound.
            _ = try JobsTable.handBack(ids: first.map(\.id), leases: first.map(\.lease), worker: worker, on: db)
            let rest = try claim(db, limit: 10, cursor: &cursor)
            #expect(Set(rest.map(\.id)).isSuperset(of: first.map(\.id)), "the handed-back jobs were claimed again")
            #expect(rest.count == 6)
        }
    }

    /// Within a key, priority (smaller first) then run_at order holds.
    @Test func withinAKeyPriorityComesFirst() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(3, key: "k", priority: 5, on: db)
            try jobs(3, key: "k", priority: -5, on: db)
            var cursor = JobsTable.FairCursor.start
            let got = try claim(db, limit: 3, cursor: &cursor, complete: false)
            let priorities = try db.query("select priority from courier.jobs where id = any(\(got.map(\.id))::bigint[])")
                .rows.map { try $0.decode(0, as: Int.self) }
            #expect(priorities.count == 3 && priorities.allSatisfy { $0 == -5 }, "smaller runs first: \(priorities)")
        }
    }

    /// The plain claim and the destination spread claim leave keyed jobs to the fair claim, so a
    /// worker that has not yet seen a queue's keys cannot start them past a key's cap.
    @Test func thePlainAndSpreadClaimsLeaveKeyedJobsAlone() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(5, key: "k", on: db)
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            let spread = try JobsTable.claimSpread(queue: "default", limit: 10, perDestination: 5, after: nil, excluding: [], visit: 16,
                                                   worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(spread.jobs.isEmpty, "the spread claim took \(spread.jobs.count) keyed jobs")
            var cursor = JobsTable.FairCursor.start
            #expect(try claim(db, limit: 10, cursor: &cursor).count == 5)
        }
    }

    /// A paused queue, a breaker holding a destination back and a destination with a traffic
    /// policy keep their jobs from the fair claim as from the plain one.
    @Test func theFairClaimRespectsPausesBreakersAndGates() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try jobs(5, key: "k", on: db)
            _ = try QueueSettingsTable.setPaused(queue: "default", true, on: db)
            var cursor = JobsTable.FairCursor.start
            #expect(try claim(db, limit: 10, cursor: &cursor).isEmpty, "a paused queue gives nothing")
            _ = try QueueSettingsTable.setPaused(queue: "default", false, on: db)
            _ = try DestinationsTable.merge(.init(destination: "http://fair.test:80", maxInFlight: 1), on: db)
            while try JobsTable.trafficMaintain(batch: 2000, on: db) >= 2000 {}
            #expect(try claim(db, limit: 10, cursor: &cursor).isEmpty, "a gated destination's keyed jobs are claim_gated's")
            let gated = try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(gated.count == 1, "the gate takes them, within the destination's cap")
        }
    }

    /// The attack on a cap: six claimers race for a key capped at 3; the key's running count,
    /// read after every claim, never passes 3, while an uncapped key beside it runs freely.
    @Test func racingClaimersNeverPassAKeysCap() throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = try TenantsTable.set("capped", weight: 1, maxInFlight: 3, on: db)
            try jobs(200, key: "capped", on: db)
            try jobs(200, key: "free", on: db)
            let peak = Shared(0)
            let claimedCapped = Shared(0)
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
                        var cursor = JobsTable.FairCursor.start
                        var held: [ClaimedJob] = []
                        for round in 0..<40 {
                            let got = try JobsTable.claimFair(queue: "default", limit: 4, cursor: cursor, quantum: 4, visit: 64,
                                                              worker: worker, leaseMilliseconds: 30_000, on: conn)
                            cursor = got.cursor
                            held += got.jobs
                            let running = try conn.query("""
                                select count(*)::bigint from courier.jobs where state = 'running' and fairness_key = 'capped'
                                """).rows[0].decode(0, as: Int.self)
                            peak.withLock { $0 = max($0, running) }
                            // Finish what is held every other round, so the cap frees up again.
                            if round % 2 == 1, !held.isEmpty {
                                let capped = try conn.query("""
                                    select count(*)::bigint from courier.jobs
                                    where id = any(\(held.map(\.id))::bigint[]) and fairness_key = 'capped'
                                    """).rows[0].decode(0, as: Int.self)
                                claimedCapped.withLock { $0 += capped }
                                _ = try JobsTable.complete(held.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200,
                                                                             durationMilliseconds: 1) }, worker: worker, on: conn)
                                held = []
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }.start()
            }
            done.wait()
            #expect(failures.value.isEmpty, "\(failures.value)")
            #expect(peak.value <= 3, "the capped key had \(peak.value) running, above its cap of 3")
            #expect(claimedCapped.value >= 6, "the capped key made progress (\(claimedCapped.value) claimed)")
        }
    }

    /// Bad settings are refused naming the parameter, and the table is left as it was.
    @Test func tenantSetRefusesBadValuesNamingTheParameter() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for (sql, column) in [("select courier.tenant_set('k', weight => 0)", "weight"),
                                  ("select courier.tenant_set('k', max_in_flight => 0)", "max_in_flight"),
                                  ("select courier.tenant_set('has space', weight => 2)", "fairness_key"),
                                  ("select courier.tenant_set('k', clear => array['colour'])", "clear")] {
                do {
                    try db.execute(PostgresQuery(unsafeSQL: sql))
                    Issue.record("\(sql) was accepted")
                } catch let error as PostgresError {
                    #expect(error.sqlState == "22023" && error.columnName == column, "\(sql): \(error)")
                }
            }
            #expect(try db.query("select count(*)::bigint from courier.tenants").rows[0].decode(0, as: Int.self) == 0)
            let set = try TenantsTable.set("k", weight: 3, maxInFlight: 5, on: db)
            #expect(set.weight == 3 && set.maxInFlight == 5)
            let cleared = try TenantsTable.set("k", weight: nil, maxInFlight: nil, clear: [.maxInFlight], on: db)
            #expect(cleared.weight == 3 && cleared.maxInFlight == nil, "clearing the cap keeps the weight")
            #expect(try TenantsTable.reset("k", on: db))
            #expect(try !TenantsTable.reset("k", on: db))
        }
    }
}
