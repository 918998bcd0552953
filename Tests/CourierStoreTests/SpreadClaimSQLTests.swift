import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The spread claim (migration 0024): a few jobs per destination from a cursor, wrapping,
/// under the plain claim's rules.
@Suite struct SpreadClaimSQLTests {
    let lease = 30_000


    func spread(_ db: PostgresConnection, limit: Int = 100, perDestination: Int = 1, after: String? = nil,
                excluding: [String] = [], visit: Int = 100, queue: String = "default") throws -> [String] {
        try JobsTable.claimSpread(queue: queue, limit: limit, perDestination: perDestination, after: after, excluding: excluding,
                                  visit: visit, worker: UUID(), leaseMilliseconds: lease, on: db).jobs.map(\.destination)
    }

    @Test func itTakesAFewJobsPerDestinationPastABacklogEnqueuedFirst() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(2000, url: "http://a.test/x")
            try TestRows(db).bulkJobs(3, url: "http://b.test/x")
            try TestRows(db).bulkJobs(3, url: "http://c.test/x")
            // The plain claim takes the backlog first.
            #expect(Set(try JobsTable.claim(queue: "default", limit: 50, worker: UUID(), leaseMilliseconds: lease, on: db)
                .map(\.destination)) == ["http://a.test:80"])
            #expect(try spread(db, perDestination: 2) == ["http://a.test:80", "http://a.test:80", "http://b.test:80",
                                                          "http://b.test:80", "http://c.test:80", "http://c.test:80"])
            #expect(try spread(db, excluding: ["http://a.test:80"]) == ["http://b.test:80", "http://c.test:80"])
            #expect(try spread(db, excluding: ["http://a.test:80"]).isEmpty)
            // Each job leased once, with its attempt counted, in the plain claim's order.
            #expect(try db.query("select count(*)::bigint from courier.jobs where state = 'running' and attempt = 1").rows[0]
                .decode(0, as: Int.self) == 58)
        }
    }

    /// Migration 0030. The destination a spread claim excludes is the busiest, whose claimed
    /// jobs leave dead index entries behind until vacuum (and a snapshot held elsewhere keeps
    /// them): looking past it must not walk them, wherever it sorts among the others.
    @Test func anExcludedDestinationsDeadEntriesAreNeverWalked() throws {
        try CourierTestDatabase.with { (database, db) throws in
            try TestRows(db).bulkJobs(45_000, url: "http://busy.test/x")
            try TestRows(db).bulkJobs(1, url: "http://z.test/x")
            try TestRows(db).bulkJobs(1, url: "http://a.test/x")
            try db.simpleQuery("vacuum analyze courier.jobs")
            let holder = try SnapshotHolder(url: database.url)
            // The busy destination's jobs claimed and done, 100 a round: their entries are dead, and stay.
            let worker = UUID()
            func claimAndComplete(rounds: Int) throws {
                for _ in 0..<rounds {
                    let jobs = try JobsTable.claim(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db)
                        .filter { $0.destination == "http://busy.test:80" }
                    try JobsTable.complete(jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                           worker: worker, archive: false, on: db)
                }
            }
            try claimAndComplete(rounds: 200)
            try db.simpleQuery("vacuum courier.jobs")
            let walkToBusy = try explainBuffers("""
                select min(destination) from courier.jobs where state = 'available' and destination > 'http://b'
                """, [], on: db)
            // Measured the second time: the first call in a session also plans the function's statements.
            let spreadSQL = "select * from courier.claim_spread($1, 10, 1, $2, 30000, null, $3, 100)"
            func spreadBuffers() throws -> Int {
                _ = try explainBuffers(spreadSQL, ["default", UUID(), ["http://busy.test:80"]], on: db)
                return try explainBuffers(spreadSQL, ["default", UUID(), ["http://busy.test:80"]], on: db)
            }
            let spreadAt20k = try spreadBuffers()
            #expect(walkToBusy > 400, "reaching the busy destination's first live entry walks its dead ones (\(walkToBusy) buffers)")
            // (About 470 since 0048: each of the claim's probes visits the five partitions of courier.jobs.)
            #expect(spreadAt20k < walkToBusy, "the spread claim excluding it touched \(spreadAt20k) buffers")
            // Twice the dead entries: the walk grows with them, the spread claim does not.
            try claimAndComplete(rounds: 200)
            let spreadAt40k = try spreadBuffers()
            #expect(spreadAt40k <= spreadAt20k + 10, "\(spreadAt20k) buffers at 20k dead entries, \(spreadAt40k) at 40k")
            #expect(try spread(db, limit: 10, excluding: ["http://busy.test:80"]) == ["http://a.test:80", "http://z.test:80"])
            try holder.release()
        }
    }

    @Test func theCursorStartsAfterTheLastDestinationAndWrapsOnce() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for name in ["a", "b", "c", "d"] { try TestRows(db).bulkJobs(5, url: "http://\(name).test/x") }
            #expect(try spread(db, limit: 2, after: "http://b.test:80") == ["http://c.test:80", "http://d.test:80"])
            #expect(try spread(db, limit: 10, after: "http://c.test:80")
                == ["http://d.test:80", "http://a.test:80", "http://b.test:80", "http://c.test:80"], "wraps once, ending at the cursor")
            #expect(try spread(db, limit: 10, after: "http://zzz.test:80").count == 4, "a cursor past the end wraps to the start")
            // The visit bound: only as many destinations as allowed are looked at.
            #expect(try spread(db, limit: 10, excluding: ["http://a.test:80", "http://b.test:80"], visit: 2).isEmpty)
            #expect(try spread(db, limit: 10, excluding: ["http://a.test:80", "http://b.test:80"], visit: 3) == ["http://c.test:80"])
        }
    }

    /// The review's case (issue #40, item 5): twenty destinations after the cursor have only
    /// retries scheduled ahead, another queue's jobs, or held jobs; a due job waits before the
    /// cursor. Each call says how far it looked, the next goes on from there, and the due job
    /// is reached, instead of every call spending its visits on the same twenty.
    @Test func theCursorMovesPastDestinationsWithNothingDue() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for n in 0..<20 {
                let url = "http://z-ahead-\(String(format: "%02d", n)).test/x"
                switch n % 3 {
                case 0:
                    var r = EnqueueRequest(url: url)
                    r.runAt = Date().addingTimeInterval(3600)
                    _ = try JobsTable.enqueue(r, on: db)
                case 1: try TestRows(db).bulkJobs(1, url: url) { $0.queue = "elsewhere" }
                default:
                    try TestRows(db).bulkJobs(1, url: url)
                    try db.query("update courier.jobs set held_since = now() where url = \(url)")
                }
            }
            try TestRows(db).bulkJobs(1, url: "http://a-due.test/x")
            var after: String? = "http://m.test:80"
            var taken: [String] = []
            var calls = 0
            while taken.isEmpty && calls < 5 {
                let round = try JobsTable.claimSpread(queue: "default", limit: 4, perDestination: 1, after: after, excluding: [],
                                                      visit: 8, worker: UUID(), leaseMilliseconds: lease, on: db)
                taken = round.jobs.map(\.destination)
                if taken.isEmpty {
                    let visited = try #require(round.visited, "an empty call still says where it stopped")
                    #expect(visited > (after ?? ""), "the cursor moves on: \(visited) after \(after ?? "nil")")
                }
                after = round.visited
                calls += 1
            }
            #expect(taken == ["http://a-due.test:80"], "the due job is reached after \(calls) calls")
            #expect(calls == 3, "8 visits a call: two calls walk the twenty, the third wraps to the due job")
        }
    }

    @Test func heldBrokenPausedAndGatedDestinationsAndLockedRowsAreSkipped() throws {
        try CourierTestDatabase.with { (database, db) throws in
            for name in ["held", "open", "later", "gated", "locked", "ok"] { try TestRows(db).bulkJobs(2, url: "http://\(name).test/x") }
            try TestRows(db).bulkJobs(2, url: "http://ok.test/x") { $0.queue = "other" }
            try TestRows(db).hold(.destination("http://held.test:80"))
            _ = try BreakersTable.force(destination: "http://open.test:80", action: .open, on: db)
            try BreakersTable.pause(destination: "http://later.test:80", milliseconds: 60_000, on: db)
            // A policy set, its jobs not yet moved by the keeper: left alone.
            _ = try DestinationsTable.merge(.init(destination: "http://gated.test", maxInFlight: 5), on: db)
            let blocker = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { blocker.close() }
            try blocker.simpleQuery("begin")
            let lockedID = try blocker.query("""
                select id from courier.jobs where destination = 'http://locked.test:80' order by id limit 1 for update
                """).rows[0].decode(0, as: Int64.self)
            let taken = try JobsTable.claimSpread(queue: "default", limit: 100, perDestination: 5, after: nil, excluding: [],
                                                  visit: 100, worker: UUID(), leaseMilliseconds: lease, on: db).jobs
            #expect(taken.map(\.destination) == ["http://locked.test:80", "http://ok.test:80", "http://ok.test:80"])
            #expect(!taken.map(\.id).contains(lockedID), "the locked row is skipped, its neighbour taken")
            #expect(taken.allSatisfy { $0.queue == "default" })
            try blocker.simpleQuery("rollback")

            // A paused queue yields nothing.
            _ = try QueueSettingsTable.setPaused(queue: "other", true, on: db)
            #expect(try spread(db, queue: "other").isEmpty)
            _ = try QueueSettingsTable.setPaused(queue: "other", false, on: db)
            #expect(try spread(db, perDestination: 5, queue: "other") == ["http://ok.test:80", "http://ok.test:80"])
        }
    }

    /// A SQL function's plan is generic (the destination unknown to the planner): the take
    /// must still walk the index, not scan and sort a large destination's rows.
    @Test func theTakeWalksTheIndexEvenForALargeDestination() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(20_000, url: "http://a.test/x")
            try TestRows(db).bulkJobs(3, url: "http://b.test/x")
            _ = try DestinationsTable.merge(.init(destination: "http://capped.test", maxInFlight: 3, slowStartMilliseconds: 0), on: db)
            try TestRows(db).bulkJobs(3, url: "http://capped.test/x")
            while try JobsTable.trafficMaintain(batch: 1000, on: db) >= 1000 {}
            try db.simpleQuery("analyze courier.jobs")
            try db.simpleQuery("begin")
            let spread = try db.query("select count(*)::bigint from courier.claim_spread('default', 10, 5, gen_random_uuid(), 30000, null, '{}', 10)")
                .rows[0].decode(0, as: Int.self)
            let gated = try db.query("select count(*)::bigint from courier.claim_gated('default', 10, gen_random_uuid(), 30000)")
                .rows[0].decode(0, as: Int.self)
            let scans = try db.query(PostgresQuery(unsafeSQL: "select coalesce(sum(seq_scan), 0)::bigint from pg_stat_xact_user_tables where relid in (\(JobsPartitions.relids))"))
                .rows[0].decode(0, as: Int.self)
            try db.simpleQuery("rollback")
            #expect(spread == 8)
            #expect(gated == 3)
            #expect(scans == 0, "no sequential scan of courier.jobs (\(scans))")
        }
    }

    /// The take goes priority by priority (0033): a priority whose jobs are all ahead is
    /// passed, the due jobs of the next ones are taken in order, up to the limit, and a
    /// retry-only take skips first attempts.
    @Test func theTakeSkipsAPriorityScheduledAheadAndFillsFromTheNextOnes() throws {
        try CourierTestDatabase.with { (_, db) throws in
            func add(_ n: Int, priority: Int, runAt: Date?) throws {
                var requests: [EnqueueRequest] = []
                for _ in 0..<n {
                    var r = EnqueueRequest(url: "http://p.test/x")
                    r.priority = priority
                    r.runAt = runAt
                    requests.append(r)
                }
                _ = try JobsTable.enqueueMany(requests, on: db)
            }
            try add(5, priority: 0, runAt: Date().addingTimeInterval(3600))
            try add(2, priority: 1, runAt: nil)
            try add(5, priority: 2, runAt: nil)
            func take(_ limit: Int, retries: Bool?) throws -> [Int] {
                try db.query(PostgresQuery(unsafeSQL: """
                    select priority from courier.claim_take('http://p.test:80', 'default', false, gen_random_uuid(), 30000, $1::int, $2::boolean)
                    """, binds: [limit, retries])).rows.map { try $0.decode(0, as: Int.self) }
            }
            try db.simpleQuery("begin")
            #expect(try take(4, retries: true) == [], "no job has an attempt behind it")
            #expect(try take(4, retries: nil) == [1, 1, 2, 2])
            #expect(try take(10, retries: false) == [2, 2, 2])
            #expect(try take(10, retries: nil) == [], "the priority-0 jobs are an hour ahead")
            try db.simpleQuery("rollback")
        }
    }

    @Test func theGatedClaimStillTakesThroughTheSharedStatement() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(10, url: "http://capped.test/x")
            _ = try DestinationsTable.merge(.init(destination: "http://capped.test", maxInFlight: 3, slowStartMilliseconds: 0), on: db)
            while try JobsTable.trafficMaintain(batch: 1000, on: db) >= 1000 {}
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).count == 3)
            #expect(try spread(db).isEmpty, "gated jobs are the gated claim's")
        }
    }
}
