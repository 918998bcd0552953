import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Destination traffic control in SQL (migration 0014): the gated claim's cap, token bucket,
/// retry budget and pause; the plain claim leaving gated jobs alone; the keeper's bounded
/// holding, releasing, gating and ungating.
@Suite struct TrafficSQLTests {
    let lease = 30_000


    func count(_ db: PostgresConnection, _ sql: PostgresQuery) throws -> Int {
        try db.query(sql).rows[0].decode(0, as: Int.self)
    }

    /// Runs the keeper until nothing is left to move.
    func keep(_ db: PostgresConnection, batch: Int = 2000) throws {
        while try JobsTable.trafficMaintain(batch: batch, on: db) >= batch {}
    }

    @Test func theGatedClaimNeverExceedsTheCapAcrossRacingClaimers() throws {
        try CourierTestDatabase.with { (database, db) throws in
            try TestRows(db).bulkJobs(300, url: "http://capped.test/x")
            _ = try DestinationsTable.merge(.init(destination: "http://capped.test", maxInFlight: 7, slowStartMilliseconds: 0), on: db)
            try keep(db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 300)

            let peak = Shared(0)
            let claimed = Shared(0)
            let failures = Shared<[String]>([])
            let done = DispatchGroup()
            for _ in 0..<6 {
                done.enter()
                let thread = Thread {
                    defer { done.leave() }
                    do {
                        let conn = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                        defer { conn.close() }
                        let worker = UUID()
                        for _ in 0..<60 {
                            let jobs = try JobsTable.claimGated(queue: "default", limit: 5, worker: worker, leaseMilliseconds: 30_000, on: conn)
                            // A committed state: the count the next claimer sees.
                            let running = try conn.query("""
                                select count(*)::bigint from courier.jobs where state = 'running' and destination = 'http://capped.test:80'
                                """).rows[0].decode(0, as: Int.self)
                            peak.withLock { $0 = max($0, running) }
                            claimed.withLock { $0 += jobs.count }
                            if !jobs.isEmpty {
                                try JobsTable.complete(jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                                       worker: worker, on: conn)
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                thread.start()
            }
            done.wait()
            #expect(failures.value.isEmpty, "\(failures.value)")
            #expect(peak.value <= 7, "peak in flight \(peak.value) above the cap of 7")
            #expect(claimed.value > 7, "claimers made progress (claimed \(claimed.value))")
        }
    }

    @Test func theCapIsFilledAndSlowStartRampsFromOne() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(50, url: "http://ramp.test/x")
            _ = try DestinationsTable.merge(.init(destination: "http://ramp.test", maxInFlight: 10, slowStartMilliseconds: 0), on: db)
            try keep(db)
            let worker = UUID()
            let first = try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db)
            #expect(first.count == 10)
            #expect(first.allSatisfy { $0.claimedThroughGate }, "the attempt's span tells a traffic wait by it")
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            let waits = try count(db, "select slot_waits from courier.destinations where destination = 'http://ramp.test:80'")
            #expect(waits >= 1)

            // A breaker that closes starts a ramp: 1 at first, up to the cap over the slow start.
            try TestRows(db).release(.state("running"))
            _ = try DestinationsTable.merge(.init(destination: "http://ramp.test", slowStartMilliseconds: 60_000), on: db)
            try db.query("select courier.breaker_release_jobs('http://ramp.test:80')")
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count == 1)
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            // Half way through the ramp: 1 + floor(9 * 0.5) = 5.
            try TestRows(db).rampStarted(ago: .seconds(30))
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count == 4)
        }
    }

    @Test func givingTheSameRateAndBurstAgainHandsOutNoToken() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(30, url: "http://refill.test/x")
            // One token every 10 s: nothing refills while the test runs.
            let policy = DestinationsTable.Policy(destination: "http://refill.test", ratePerSecond: 0.1, burst: 1)
            _ = try DestinationsTable.merge(policy, on: db)
            try keep(db)
            let worker = UUID()
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).count == 1)
            // `jobctl destination set --rate ... --burst ...` again, unchanged: no refill.
            for _ in 0..<3 {
                _ = try DestinationsTable.merge(policy, on: db)
                #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).isEmpty,
                        "an unchanged rate and burst hand out no token")
            }
            // Other fields change nothing either.
            _ = try DestinationsTable.merge(.init(destination: "http://refill.test", signingSecret: "S", retryBudgetPercent: 50), on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            // A bigger bucket keeps the level it had (empty), not a full bucket of the new size.
            _ = try DestinationsTable.merge(.init(destination: "http://refill.test", burst: 5), on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).isEmpty,
                    "a real change never hands out more tokens than the bucket held")
            // So does a faster rate (it refills faster from now on, not at once).
            _ = try DestinationsTable.merge(.init(destination: "http://refill.test", ratePerSecond: 0.2), on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where state = 'running'") == 1)
        }
    }

    @Test func aSmallerBucketKeepsAtMostItsSizeAndANewRateStartsFull() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(30, url: "http://shrink.test/x")
            // A new rate starts with a full bucket (there was no bucket to keep).
            _ = try DestinationsTable.merge(.init(destination: "http://shrink.test", ratePerSecond: 0.1, burst: 10), on: db)
            try keep(db)
            // Full (10 tokens); shrunk to 3: at most 3 of them remain.
            _ = try DestinationsTable.merge(.init(destination: "http://shrink.test", burst: 3), on: db)
            let worker = UUID()
            #expect(try JobsTable.claimGated(queue: "default", limit: 20, worker: worker, leaseMilliseconds: lease, on: db).count == 3)
            #expect(try JobsTable.claimGated(queue: "default", limit: 20, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            // Empty, shrunk again: still empty (it used to refill to the new size).
            _ = try DestinationsTable.merge(.init(destination: "http://shrink.test", burst: 2), on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 20, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            // Clearing the rate drops the bucket; a rate given again starts from a full one.
            _ = try DestinationsTable.merge(.init(destination: "http://shrink.test"), clear: [.rate, .burst], on: db)
            #expect(try db.query("select tokens from courier.destinations").rows[0].decode(0, as: Double?.self) == nil)
            _ = try DestinationsTable.merge(.init(destination: "http://shrink.test", ratePerSecond: 0.1, burst: 2), on: db)
            try keep(db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 20, worker: worker, leaseMilliseconds: lease, on: db).count == 2)
        }
    }

    /// Registers live workers whose concurrencies add up to the fleet's slots.
    func registerWorkers(_ db: PostgresConnection, concurrency: [Int]) throws {
        for c in concurrency {
            try WorkersTable.register(.init(id: UUID(), host: "test", pid: 1, queues: ["default"], concurrency: c,
                                            version: "test", heartbeatIntervalMilliseconds: 10_000), on: db)
        }
    }

    @Test func aSlowStartWithoutACapRampsFromOneToTheFleetsSlots() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try registerWorkers(db, concurrency: [16, 16, 16])
            // A stopping worker's slots are not the fleet's.
            let stopping = UUID()
            try WorkersTable.register(.init(id: stopping, host: "test", pid: 2, queues: ["default"], concurrency: 50,
                                            version: "test", heartbeatIntervalMilliseconds: 10_000), on: db)
            _ = try WorkersTable.heartbeat(id: stopping, stopping: true, on: db)
            #expect(try count(db, "select courier.fleet_slots()::bigint") == 48)

            try TestRows(db).bulkJobs(200, url: "http://ramp.test/x")
            try TestRows(db).bulkJobs(5, url: "http://plain.test/x")
            let policy = try DestinationsTable.merge(.init(destination: "http://ramp.test", slowStartMilliseconds: 60_000), on: db)
            #expect(policy.isGated)
            #expect(try count(db, "select count(*)::bigint from courier.destinations where gated") == 1,
                    "a slow start alone gates the destination: its jobs go through the claim that enforces the ramp")
            try keep(db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 200)
            // The plain claim takes the other destination's jobs and none of the ramped one's.
            let plain = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(plain.count == 5)
            #expect(plain.allSatisfy { $0.destination == "http://plain.test:80" })

            // The breaker closes: 1 in flight at first.
            try db.query("select courier.breaker_release_jobs('http://ramp.test:80')")
            let worker = UUID()
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count == 1)
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).isEmpty)
            #expect(try count(db, "select slot_waits from courier.destinations where destination = 'http://ramp.test:80'") >= 1)
            // Half way: 1 + floor((48 - 1) x 0.5) = 24 in flight.
            try TestRows(db).rampStarted(ago: .seconds(30))
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count == 23)
            // After the slow start: no limit.
            try TestRows(db).rampStarted(ago: .seconds(61))
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count == 100)
        }
    }

    @Test func theRampRuleWithAndWithoutACap() throws {
        try CourierTestDatabase.with { (_, db) throws in
            /// courier.traffic_cap at now() for a ramp started `ago` milliseconds before (nil: none).
            func cap(_ max: Int?, _ slow: Int64?, _ ago: Int?, fleet: Int) throws -> Int? {
                try db.query(PostgresQuery(unsafeSQL: """
                    select courier.traffic_cap($1::int, $2::bigint, now() - $3::int * interval '1 millisecond', now(), $4::int)
                    """, binds: [max, slow, ago, fleet])).rows[0].decode(0, as: Int?.self)
            }
            // Without a cap: a set slow start ramps from 1 up to the fleet's slots, then no limit.
            #expect(try cap(nil, 6000, 0, fleet: 97) == 1)
            #expect(try cap(nil, 6000, 3000, fleet: 97) == 49)
            #expect(try cap(nil, 6000, 6000, fleet: 97) == nil)
            #expect(try cap(nil, 6000, nil, fleet: 97) == nil)
            #expect(try cap(nil, 6000, 3000, fleet: 0) == 1, "an empty fleet still lets one through")
            // Without a cap and without a slow start (NULL or 0): never limited.
            #expect(try cap(nil, nil, 0, fleet: 97) == nil)
            #expect(try cap(nil, 0, 0, fleet: 97) == nil)
            // With a cap, as before: the default slow start is 5 s, and the fleet plays no part.
            #expect(try cap(10, nil, 2500, fleet: 97) == 5)
            #expect(try cap(10, 0, 0, fleet: 97) == 10)
            #expect(try cap(10, nil, nil, fleet: 97) == 10)
            // A slow start of 0 alone is no policy: not gated.
            _ = try DestinationsTable.merge(.init(destination: "http://none.test", slowStartMilliseconds: 0), on: db)
            #expect(try count(db, "select count(*)::bigint from courier.destinations where gated") == 0)
            _ = try DestinationsTable.merge(.init(destination: "http://none.test", slowStartMilliseconds: 1000), on: db)
            #expect(try count(db, "select count(*)::bigint from courier.destinations where gated") == 1)
            _ = try DestinationsTable.merge(.init(destination: "http://none.test"), clear: [.slowStart], on: db)
            #expect(try count(db, "select count(*)::bigint from courier.destinations where gated") == 0)
        }
    }

    @Test func theTokenBucketAllowsBurstThenRate() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(100, url: "http://rated.test/x")
            // One token a second: the test's own few milliseconds between claims add next to
            // nothing, and time passes for the bucket by moving its tokens_at back.
            let rate = 1.0
            _ = try DestinationsTable.merge(.init(destination: "http://rated.test", ratePerSecond: rate, burst: 3), on: db)
            try keep(db)
            let worker = UUID()
            func claim() throws -> Int {
                try JobsTable.claimGated(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db).count
            }
            let started = ContinuousClock.now
            #expect(try claim() == 3, "a full bucket lets the burst through")
            var total = 3
            total += try claim()   // the bucket is empty: a token wait
            var perRefill: [Int] = []
            for _ in 0..<10 {
                try TestRows(db).refillTokens(for: .seconds(1))
                perRefill.append(try claim())
            }
            total += perRefill.reduce(0, +)
            let spent = ContinuousClock.now - started
            let elapsed = 10 + Double(spent.components.seconds) + Double(spent.components.attoseconds) / 1e18
            // At most burst + rate x elapsed (the 10 s refilled and the test's own time); and
            // every refill let a request through.
            #expect(Double(total) <= 3 + rate * elapsed + 1, "claimed \(total) in \(elapsed) s")
            #expect(perRefill.allSatisfy { $0 >= 1 }, "each second refilled a token: \(perRefill)")
            #expect(total >= 3 + 10, "claimed \(total) in \(elapsed) s")
            #expect(try count(db, "select token_waits from courier.destinations") >= 1)
        }
    }

    @Test func thePlainClaimLeavesGatedJobsAloneAndIsNotBlockedByThem() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // A large, urgent backlog of a paused destination ahead of a healthy one.
            try TestRows(db).bulkJobs(3000, url: "http://blocked.test/x") { $0.priority = -10 }
            try TestRows(db).bulkJobs(5, url: "http://healthy.test/x")
            _ = try DestinationsTable.setPaused(destination: "http://blocked.test", true, on: db)
            // Before the keeper ran: locked and skipped, never taken.
            let early = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(early.map(\.destination) == Array(repeating: "http://healthy.test:80", count: 5))
            try TestRows(db).release(.all, resetAttempts: true)
            try keep(db, batch: 1000)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 3000)
            try TestRows(db).release(.all, resetAttempts: true)
            let claimed = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(claimed.count == 5)
            #expect(claimed.allSatisfy { $0.destination == "http://healthy.test:80" })
            // Paused: the gated claim takes nothing and no attempt is used.
            #expect(try JobsTable.claimGated(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where attempt > 0 and destination = 'http://blocked.test:80'") == 0)
            // Resumed (no other policy): ungated again, back in the plain claim.
            _ = try DestinationsTable.setPaused(destination: "http://blocked.test", false, on: db)
            try keep(db, batch: 1000)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 0)
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).count == 10)
        }
    }

    /// The review's case: the backlog of a destination paused a moment ago, at the same
    /// priority as a healthy destination's jobs and far larger than a keeper pass, before the
    /// keeper moved any of it. The plain claim must not spend its LIMIT on those rows.
    @Test func aJustGatedBacklogAtTheSamePriorityDoesNotStallThePlainClaim() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(5000, url: "http://paused.test/x")
            try TestRows(db).bulkJobs(5, url: "http://healthy.test/x")
            _ = try DestinationsTable.setPaused(destination: "http://paused.test", true, on: db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 0, "the keeper has not run")
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(claimed.map(\.destination) == Array(repeating: "http://healthy.test:80", count: 5),
                    "the first claim takes the healthy destination's jobs")
            #expect(try count(db, "select count(*)::bigint from courier.jobs where destination = 'http://paused.test:80' and attempt > 0") == 0)
        }
    }

    /// Every door gates a job whose destination has a policy or a pause when it arrives:
    /// `courier.enqueue`, the Swift enqueue, the bulk COPY path and a replay.
    @Test func everyEnqueueDoorGatesJobsOfAGatedDestination() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try DestinationsTable.setPaused(destination: "http://paused.test", true, on: db)
            _ = try DestinationsTable.merge(.init(destination: "http://capped.test", maxInFlight: 3), on: db)
            try db.query("select courier.enqueue(url => 'http://paused.test/sql')")
            _ = try JobsTable.enqueue(EnqueueRequest(url: "http://capped.test/swift"), on: db)
            try TestRows(db).bulkJobs(20, url: "http://paused.test/copy")
            try TestRows(db).bulkJobs(3, url: "http://free.test/x")
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated") == 22)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated and destination = 'http://free.test:80'") == 0)
            // A dead letter of a destination gated after it failed comes back gated when replayed.
            _ = try JobsTable.enqueue(EnqueueRequest(url: "http://later.test/replayed"), on: db)
            let worker = UUID()
            let failed = try JobsTable.claim(queue: "default", limit: 100, worker: worker, leaseMilliseconds: lease, on: db)
                .filter { $0.destination == "http://later.test:80" }
            try #require(failed.count == 1)
            _ = try JobsTable.deadLetter([.init(id: failed[0].id, attempt: failed[0].attempt, lease: failed[0].lease, reason: .permanent,
                                                errorJSON: #"{"class":"client"}"#, lastClass: .client, lastStatus: 400)],
                                         worker: worker, on: db)
            try TestRows(db).release(.all, resetAttempts: true)
            _ = try DestinationsTable.merge(.init(destination: "http://later.test", maxInFlight: 3), on: db)
            #expect(try count(db, "select count(*)::bigint from courier.replay_dead_letters()") == 1)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where gated and url = 'http://later.test/replayed'") == 1)
            // None of them reaches the plain claim.
            #expect(try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
                .map(\.destination) == Array(repeating: "http://free.test:80", count: 3))
        }
    }

    @Test func gatedDestinationsAreServedInTurn() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for name in ["a", "b", "c"] {
                try TestRows(db).bulkJobs(20, url: "http://\(name).test/x")
                _ = try DestinationsTable.merge(.init(destination: "http://\(name).test", maxInFlight: 100), on: db)
            }
            try keep(db)
            let worker = UUID()
            var served: [String: Int] = [:]
            for _ in 0..<3 {
                for job in try JobsTable.claimGated(queue: "default", limit: 1, worker: worker, leaseMilliseconds: lease, on: db) {
                    served[job.destination, default: 0] += 1
                }
            }
            #expect(served.count == 3, "each destination served once in three claims: \(served)")
        }
    }

    @Test func theRetryBudgetDefersRetriesButNotFirstAttempts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(40, url: "http://budget.test/x")
            // 20 of them are retries (an attempt behind them).
            try db.query("update courier.jobs set attempt = 1 where id in (select id from courier.jobs order by id limit 20)")
            _ = try DestinationsTable.merge(.init(destination: "http://budget.test", retryBudgetPercent: 10), on: db)
            try keep(db)
            let claimed = try JobsTable.claimGated(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            let retries = claimed.filter { $0.attempt > 1 }.count
            #expect(claimed.count - retries == 20, "every first attempt runs")
            #expect(retries == 3, "retries at most max(3, 10% of requests): \(retries)")
            #expect(try count(db, "select retries_deferred from courier.destinations") >= 1)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where state = 'available' and attempt = 1") == 17,
                    "deferred retries wait with their attempt count unchanged")
        }
    }

    @Test func retryAfterAndAnOpenBreakerApplyOnTopOfTheLimits() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(5, url: "http://limited.test/x")
            _ = try DestinationsTable.merge(.init(destination: "http://limited.test", maxInFlight: 5), on: db)
            try keep(db)
            try BreakersTable.pause(destination: "http://limited.test:80", milliseconds: 60_000, on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            try TestRows(db).setNotBefore(nil, nil)
            _ = try BreakersTable.force(destination: "http://limited.test:80", action: .open, on: db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            _ = try BreakersTable.force(destination: "http://limited.test:80", action: .close, on: db)
            try keep(db)
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).count == 1,
                    "closing starts the slow start: one at first")
        }
    }

    @Test func aPausedQueueYieldsNothingToEitherClaim() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(3, url: "http://plain.test/x") { $0.queue = "q" }
            try TestRows(db).bulkJobs(3, url: "http://capped.test/x") { $0.queue = "q" }
            _ = try DestinationsTable.merge(.init(destination: "http://capped.test", maxInFlight: 5), on: db)
            try keep(db)
            #expect(try QueueSettingsTable.setPaused(queue: "q", true, on: db) == false)
            #expect(try QueueSettingsTable.paused(on: db) == ["q"])
            #expect(try JobsTable.claim(queue: "q", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            #expect(try JobsTable.claimGated(queue: "q", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
            #expect(try QueueSettingsTable.setPaused(queue: "q", false, on: db) == true)
            #expect(try JobsTable.claim(queue: "q", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).count == 3)
        }
    }

    @Test func breakerHoldsAndReleasesHappenInBoundedKeeperBatches() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try TestRows(db).bulkJobs(2500, url: "http://outage.test/x")
            _ = try BreakersTable.force(destination: "http://outage.test:80", action: .open, on: db)
            // Opening holds nothing inline any more.
            #expect(try count(db, "select count(*)::bigint from courier.jobs where held_since is not null") == 0)
            #expect(try JobsTable.trafficMaintain(batch: 1000, on: db) == 1000)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where held_since is not null") == 1000)
            try keep(db, batch: 1000)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where held_since is not null") == 2500)
            #expect(try count(db, "select deferred_jobs from courier.breakers") == 2500)
            _ = try BreakersTable.force(destination: "http://outage.test:80", action: .close, on: db)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where held_since is not null") == 2500)
            #expect(try JobsTable.trafficMaintain(batch: 1000, on: db) == 1000)
            try keep(db, batch: 1000)
            #expect(try count(db, "select count(*)::bigint from courier.jobs where held_since is not null") == 0)
        }
    }

    @Test func badPolicyValuesAreRefusedNamingTheField() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for (policy, field) in [
                (DestinationsTable.Policy(destination: "http://x.test", maxInFlight: 0), "max_in_flight"),
                (DestinationsTable.Policy(destination: "http://x.test", ratePerSecond: -1), "rate"),
                (DestinationsTable.Policy(destination: "http://x.test", burst: 0), "burst"),
                (DestinationsTable.Policy(destination: "http://x.test", retryBudgetPercent: 101), "retry_budget_pct"),
            ] {
                #expect(throws: PostgresError.self) { _ = try DestinationsTable.merge(policy, on: db) }
                do {
                    _ = try DestinationsTable.merge(policy, on: db)
                } catch let error as PostgresError {
                    #expect(error.sqlState == "22023" && "\(error)".contains(field), "\(error)")
                }
            }
            #expect(try DestinationsTable.all(on: db).isEmpty)
        }
    }
}

/// A value shared by test threads.
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T { try lock.withLock { try body(&stored) } }
}
