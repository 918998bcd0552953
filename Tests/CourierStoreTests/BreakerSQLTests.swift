import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The fleet-shared circuit breaker in SQL (DESIGN.md invariant 4), against the real
/// database: evidence reports, tripping, holding jobs, the single probe, its
/// generation fence, cooldown escalation, operator actions and the event log.
@Suite struct BreakerSQLTests {
    static let destination = "https://down.example.com:443"
    static let healthyURL = "https://up.example.com/x"

    /// Trips on 5 in a row, or on 50% failures once 20 outcomes were seen in a minute; 60 s cooldown up to 4 min.
    static let policy = BreakersTable.ReportPolicy(
        failureThreshold: 5, windowMilliseconds: 60_000, minimumVolume: 20, failureRate: 0.5,
        cooldownMilliseconds: 60_000, cooldownMaxMilliseconds: 240_000, probeLeaseMilliseconds: 30_000)

    struct Row: Equatable {
        var state: String
        var consecutiveFailures: Int
        var windowFailures: Int
        var windowSuccesses: Int
        var cooldownMilliseconds: Int64
        /// open_until - changed_at: the open period actually granted (both are the same statement's now()).
        var openForMilliseconds: Int64?
        var generation: Int64
        var forced: Bool
        var probeOwner: String?
    }

    static func row(_ db: PostgresConnection, _ destination: String = destination) throws -> Row? {
        guard let r = try db.query("""
            select state, consecutive_failures, window_failures, window_successes, cooldown_ms,
                   case when open_until is null or open_until = 'infinity' then null
                        else (extract(epoch from open_until - changed_at) * 1000)::bigint end,
                   generation, forced, probe_owner::text
            from courier.breakers where destination = \(destination)
            """).rows.first else { return nil }
        return Row(state: try r.decode(0, as: String.self), consecutiveFailures: try r.decode(1, as: Int.self),
                   windowFailures: try r.decode(2, as: Int.self), windowSuccesses: try r.decode(3, as: Int.self),
                   cooldownMilliseconds: try r.decode(4, as: Int64.self), openForMilliseconds: try r.decode(5, as: Int64?.self),
                   generation: try r.decode(6, as: Int64.self), forced: try r.decode(7, as: Bool.self),
                   probeOwner: try r.decode(8, as: String?.self))
    }

    struct Event: Equatable, CustomStringConvertible {
        var from: String
        var to: String
        var reason: String
        var worker: String?
        var description: String { "\(from)->\(to) (\(reason), \(worker ?? "nil"))" }
    }

    static func events(_ db: PostgresConnection, _ destination: String = destination) throws -> [Event] {
        try db.query("""
            select from_state, to_state, reason, worker from courier.breaker_events
            where destination = \(destination) order by id
            """).rows.map {
            Event(from: try $0.decode(0, as: String.self), to: try $0.decode(1, as: String.self),
                  reason: try $0.decode(2, as: String.self), worker: try $0.decode(3, as: String?.self))
        }
    }

    @discardableResult
    static func report(_ db: PostgresConnection, successes: Int = 0, failures: Int = 0, trailing: Int? = nil,
                       worker: String = "w1", policy: BreakersTable.ReportPolicy = policy) throws -> String {
        try BreakersTable.report(destination: destination, successes: successes, failures: failures,
                                 trailingFailures: trailing ?? (successes == 0 ? failures : 0), worker: worker,
                                 policy: policy, on: db)
    }

    /// Opens the breaker through evidence (5 failures in a row).
    static func trip(_ db: PostgresConnection, cooldownMilliseconds: Int64 = 60_000) throws {
        var p = policy
        p.cooldownMilliseconds = cooldownMilliseconds
        #expect(try report(db, failures: 5, policy: p) == "open")
        // Holding is the traffic keeper's, in bounded batches off the report path.
        try keep(db)
    }

    /// Runs the traffic keeper's bounded passes until nothing is left to hold or release.
    static func keep(_ db: PostgresConnection) throws {
        while try JobsTable.trafficMaintain(batch: 1000, on: db) >= 1000 {}
    }

    /// The cooldown elapses: moves open_until into the past. (Held jobs keep their run_at.)
    static func elapseCooldown(_ db: PostgresConnection, _ destination: String = destination) throws {
        try TestRows(db).elapseCooldown(destination)
    }

    static func enqueue(_ db: PostgresConnection, _ count: Int, url: String = "https://down.example.com/hook") throws -> [Int64] {
        try TestRows(db).jobs(count, url: url)
    }

    static func jobState(_ db: PostgresConnection, _ id: Int64) throws -> (state: String, attempt: Int, runAt: Date) {
        let r = try #require(try db.query("select state, attempt, run_at from courier.jobs where id = \(id)").rows.first)
        return (try r.decode(0, as: String.self), try r.decode(1, as: Int.self), try r.decode(2, as: Date.self))
    }

    // MARK: - Evidence and tripping

    @Test func consecutiveFailuresTripTheBreakerAndASuccessRestartsTheRun() throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(try Self.report(db, failures: 3) == "closed")
            #expect(try Self.row(db)?.consecutiveFailures == 3)
            // A success inside the batch: only the failures after it remain in the run.
            #expect(try Self.report(db, successes: 1, failures: 2, trailing: 1) == "closed")
            #expect(try Self.row(db)?.consecutiveFailures == 1)
            #expect(try Self.report(db, failures: 3) == "closed")
            #expect(try Self.row(db)?.consecutiveFailures == 4)
            #expect(try Self.report(db, failures: 1, worker: "w2") == "open")
            let row = try #require(try Self.row(db))
            #expect(row.state == "open")
            #expect(row.consecutiveFailures == 5)
            #expect(row.cooldownMilliseconds == 60_000)
            #expect(row.openForMilliseconds == 60_000, "the first open period is the base cooldown")
            #expect(try Self.events(db) == [Event(from: "closed", to: "open", reason: "consecutive_failures", worker: "w2")])
        }
    }

    @Test func failureRateTripsOnlyOnceTheMinimumVolumeIsReached() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var p = Self.policy
            p.failureThreshold = 1000
            // 9 failures, 10 successes: 47% of 19 — under both the volume and the rate.
            #expect(try Self.report(db, successes: 10, failures: 9, trailing: 0, policy: p) == "closed")
            // 100% of 19 would be over the rate, but the volume is not there yet.
            try db.query("update courier.breakers set window_successes = 0, window_failures = 19 where destination = \(Self.destination)")
            #expect(try Self.report(db, successes: 0, failures: 0, trailing: 0, policy: p) == "closed")
            try db.query("update courier.breakers set window_successes = 10, window_failures = 9 where destination = \(Self.destination)")
            // The 20th outcome, a failure: 10/20 = 50% reaches the rate.
            #expect(try Self.report(db, failures: 1, trailing: 1, policy: p) == "open")
            #expect(try Self.events(db).map(\.reason) == ["failure_rate"])
            let row = try #require(try Self.row(db))
            #expect(row.windowFailures == 10 && row.windowSuccesses == 10)
        }
    }

    @Test func evidenceOutsideTheWindowIsForgotten() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var p = Self.policy
            p.failureThreshold = 1000
            #expect(try Self.report(db, successes: 0, failures: 19, policy: p) == "closed")
            // The window ended long ago: the next report starts a new one.
            try db.query("update courier.breakers set window_started_at = now() - interval '2 minutes' where destination = \(Self.destination)")
            #expect(try Self.report(db, successes: 5, failures: 1, trailing: 1, policy: p) == "closed")
            let row = try #require(try Self.row(db))
            #expect(row.windowFailures == 1 && row.windowSuccesses == 5)
        }
    }

    @Test func evidenceFromManyConnectionsAddsUpWithNoLostUpdates() throws {
        try CourierTestDatabase.with { (database, db) throws in
            var p = Self.policy
            p.failureThreshold = 1000
            p.minimumVolume = 1_000_000
            let reportPolicy = p
            let connections = try (0..<8).map { _ in try database.connect() }
            defer { connections.forEach { $0.close() } }
            let barrier = Barrier(parties: connections.count)
            let errors = Locked<[String]>([])
            // One thread per connection (not concurrentPerform, whose pool is as small as the core count).
            let finished = DispatchGroup()
            for index in connections.indices {
                finished.enter()
                Thread {
                    barrier.wait()
                    for _ in 0..<10 {
                        do {
                            try Self.report(connections[index], failures: 1, worker: "w\(index)", policy: reportPolicy)
                        } catch {
                            errors.mutate { $0.append("\(error)") }
                        }
                    }
                    finished.leave()
                }.start()
            }
            #expect(finished.wait(timeout: .now() + 60) == .success, "the reporters finish")
            #expect(errors.value.isEmpty)
            let row = try #require(try Self.row(db))
            #expect(row.consecutiveFailures == 80)
            #expect(row.windowFailures == 80)
            #expect(row.state == "closed")
        }
    }

    @Test func onlyAClosedBreakerTakesEvidence() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try Self.trip(db)
            let before = try #require(try Self.row(db))
            // Results of requests that started before the trip change nothing.
            #expect(try Self.report(db, successes: 3, failures: 7, trailing: 7) == "open")
            #expect(try Self.row(db) == before)
            try Self.elapseCooldown(db)
            #expect(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(), probeLeaseMilliseconds: 30_000, on: db) != nil)
            let halfOpen = try #require(try Self.row(db))
            #expect(try Self.report(db, successes: 50) == "half_open")
            #expect(try Self.report(db, failures: 50) == "half_open")
            #expect(try Self.row(db) == halfOpen)
            #expect(try Self.events(db).count == 2)
        }
    }

    // MARK: - Open: jobs are held, not claimed

    @Test func openingHoldsTheDestinationsWaitingJobsWithoutTouchingAttempts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let held = try Self.enqueue(db, 5)
            let running = try Self.enqueue(db, 1)[0]
            var later = EnqueueRequest(url: "https://down.example.com/later")
            later.runAt = Date().addingTimeInterval(7200)
            let scheduled = try JobsTable.enqueue(later, on: db)
            let healthy = try Self.enqueue(db, 2, url: Self.healthyURL)
            // One job of the destination is running when the breaker opens.
            try TestRows(db).markRunning(.id(running), attempt: 1, leaseFor: .seconds(60))

            let runAtBefore = try Dictionary(uniqueKeysWithValues: (held + [scheduled]).map { ($0, try Self.jobState(db, $0).runAt) })
            try Self.trip(db)
            func heldSince(_ id: Int64) throws -> Date? {
                try db.query("select held_since from courier.jobs where id = \(id)").rows[0].decode(0, as: Date?.self)
            }
            for id in held + [scheduled] {
                let job = try Self.jobState(db, id)
                #expect(job.state == "available" && job.attempt == 0)
                #expect(try heldSince(id) != nil, "held: out of the runnable index while the breaker is open")
                #expect(job.runAt == runAtBefore[id], "run_at is untouched, so schedules and replay pacing survive")
            }
            #expect(try Self.jobState(db, running).state == "running")
            #expect(try heldSince(running) == nil)
            for id in healthy { #expect(try heldSince(id) == nil) }
            #expect(try BreakersTable.list(destination: Self.destination, on: db).first?.deferredJobs == 6)

            // Even when a held job's time comes (clock games aside), an open breaker is skipped by the claim.
            try TestRows(db).setRunAt(.ids(held), .seconds(-1))
            let claimed = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: 30_000, on: db)
            #expect(Set(claimed.map(\.id)) == Set(healthy))
            #expect(try held.allSatisfy { try Self.jobState(db, $0).attempt == 0 })
        }
    }

    // MARK: - Half-open: one probe, fenced by its generation

    @Test func jobsThatArriveOrFailWhileTheBreakerIsOpenAreHeldToo() throws {
        try CourierTestDatabase.with { (_, db) throws in
            func held(_ id: Int64) throws -> Bool {
                try db.query("select held_since is not null from courier.jobs where id = \(id)").rows[0].decode(0, as: Bool.self)
            }
            let worker = UUID()
            let inFlight = try Self.enqueue(db, 1)[0]
            let claimed = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db).first)
            try Self.trip(db)
            // A failure still in flight when the breaker opened comes back held.
            try JobsTable.retry([.init(id: inFlight, attempt: claimed.attempt, lease: claimed.lease, delayMilliseconds: 0, errorJSON: "{}")], worker: worker, on: db)
            #expect(try held(inFlight))
            // New jobs for the destination, by SQL, by Swift and in bulk, start out held.
            let bySQL = try db.query("select courier.enqueue('https://down.example.com/sql')").rows[0].decode(0, as: Int64.self)
            let bySwift = try Self.enqueue(db, 1)[0]
            _ = try JobsTable.enqueueMany([EnqueueRequest(url: "https://down.example.com/bulk"), EnqueueRequest(url: Self.healthyURL)], on: db)
            let bulk = try db.query("select id, destination from courier.jobs where url like '%/bulk' or url = \(Self.healthyURL)").rows
            #expect(try held(bySQL) && held(bySwift))
            #expect(bulk.count == 2)
            for row in bulk {
                let id = try row.decode(0, as: Int64.self)
                #expect(try held(id) == (try row.decode(1, as: String.self) == Self.destination))
            }
            // Closing releases them all, keeping their run_at.
            try BreakersTable.force(destination: Self.destination, action: .close, on: db)
            try Self.keep(db)
            #expect(try db.query("select count(*)::bigint from courier.jobs where held_since is not null").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func probesRotateOverJobsAndAnAbandonedProbeIsDueAgainAtOnce() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try Self.enqueue(db, 2)
            try TestRows(db).setAttempt(3, .id(ids[0]))
            try Self.trip(db)
            try Self.elapseCooldown(db)
            let worker = UUID()
            let generation = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: worker,
                                                                     probeLeaseMilliseconds: 30_000, on: db))
            let probe = try JobsTable.claimProbe(destination: Self.destination, generation: generation, queues: ["default"],
                                                 worker: worker, leaseMilliseconds: 30_000, on: db)
            #expect(probe?.id == ids[1], "the job with the fewest attempts carries the probe")
            let cooldownBefore = try Self.row(db)?.cooldownMilliseconds
            #expect(try BreakersTable.abandonProbe(destination: Self.destination, generation: generation, worker: "w", on: db))
            #expect(try BreakersTable.abandonProbe(destination: Self.destination, generation: generation, worker: "w", on: db) == false,
                    "a stale generation is ignored")
            let row = try #require(try Self.row(db))
            #expect(row.state == "open")
            #expect(row.cooldownMilliseconds == cooldownBefore, "no verdict: the cooldown does not grow")
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db) == [Self.destination])
            #expect(try Self.events(db).last?.reason == "probe_abandoned")
        }
    }

    @Test func exactlyOneOfTwoRacingConnectionsWinsTheProbeEveryTime() throws {
        try CourierTestDatabase.with { (database, db) throws in
            try Self.trip(db)
            let racers = try (0..<2).map { _ in try database.connect() }
            defer { racers.forEach { $0.close() } }
            let workers = [UUID(), UUID()]
            let rounds = 1000
            // Main thread + two racers: reset, race, collect.
            let start = Barrier(parties: 3)
            let done = Barrier(parties: 3)
            let results = Locked<[[Int64?]]>(Array(repeating: [nil, nil], count: rounds))
            let failures = Locked<[String]>([])
            let threads = (0..<2).map { index in
                Thread {
                    for round in 0..<rounds {
                        start.wait()
                        do {
                            let won = try BreakersTable.tryProbe(destination: Self.destination, worker: workers[index],
                                                                 probeLeaseMilliseconds: 30_000, on: racers[index])
                            results.mutate { $0[round][index] = won }
                        } catch {
                            failures.mutate { $0.append("round \(round): \(error)") }
                        }
                        done.wait()
                    }
                }
            }
            threads.forEach { $0.start() }
            for round in 0..<rounds {
                do {
                    // Never throw out of the loop: the racers would wait at the barrier forever.
                    try db.query("""
                        update courier.breakers set state = 'open', open_until = now() - interval '1 millisecond',
                            probe_owner = null, probe_lease_until = null
                        where destination = \(Self.destination)
                        """)
                } catch {
                    failures.mutate { $0.append("reset before round \(round): \(error)") }
                }
                start.wait()
                done.wait()
            }
            #expect(failures.value.isEmpty)
            let all = results.value
            let badRounds = all.indices.filter { all[$0].compactMap { $0 }.count != 1 }
            #expect(badRounds.isEmpty, "rounds without exactly one winner: \(badRounds.prefix(10)) \(badRounds.prefix(3).map { all[$0] })")
            let winsA = all.filter { $0[0] != nil }.count
            #expect(winsA > 0 && winsA < rounds, "both connections should win some rounds if they really race (A won \(winsA))")
            let generations = all.compactMap { $0[0] ?? $0[1] }
            #expect(Set(generations).count == rounds, "every probe gets its own generation")
            let grants = try db.query("""
                select count(*)::bigint from courier.breaker_events
                where destination = \(Self.destination) and to_state = 'half_open' and reason = 'cooldown_elapsed'
                """).rows[0].decode(0, as: Int.self)
            #expect(grants == rounds)
        }
    }

    @Test func aProbeIsNotGrantedBeforeTheCooldownEnds() throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(), probeLeaseMilliseconds: 1000, on: db) == nil,
                    "no row: nothing to probe")
            try Self.trip(db)
            #expect(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(), probeLeaseMilliseconds: 1000, on: db) == nil)
            _ = try Self.enqueue(db, 1)
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db).isEmpty)
            try Self.elapseCooldown(db)
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db) == [Self.destination])
            #expect(try BreakersTable.dueForProbe(queues: ["other"], on: db).isEmpty, "no job on the worker's queues: nothing to probe with")
        }
    }

    @Test func aStaleGenerationChangesNothing() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try Self.trip(db)
            try Self.elapseCooldown(db)
            let generation = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(),
                                                                     probeLeaseMilliseconds: 30_000, on: db))
            let before = try #require(try Self.row(db))
            #expect(before.state == "half_open" && before.generation == generation)
            for stale in [generation - 1, generation + 1, 0] {
                for succeeded in [true, false] {
                    #expect(try BreakersTable.probeResult(destination: Self.destination, generation: stale, succeeded: succeeded,
                                                          worker: "late", policy: Self.policy, jitter: 1, on: db) == nil)
                }
            }
            #expect(try Self.row(db) == before)
            #expect(try Self.events(db).count == 2)
            // The current generation applies once; a repeat is stale.
            #expect(try BreakersTable.probeResult(destination: Self.destination, generation: generation, succeeded: true,
                                                  worker: "w", policy: Self.policy, jitter: 1, on: db) == "closed")
            #expect(try BreakersTable.probeResult(destination: Self.destination, generation: generation, succeeded: false,
                                                  worker: "w", policy: Self.policy, jitter: 1, on: db) == nil)
            #expect(try Self.row(db)?.state == "closed")
        }
    }

    @Test func aSuccessfulProbeClosesTheBreakerAndWakesItsJobs() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let ids = try Self.enqueue(db, 4)
            try Self.trip(db)
            try Self.elapseCooldown(db)
            let listener = try database.connect()
            defer { listener.close() }
            try listener.listen("courier_jobs")
            try listener.listen("courier_breakers")

            let worker = UUID()
            let generation = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: worker,
                                                                     probeLeaseMilliseconds: 30_000, on: db))
            // Only the probe owner can claim the probe job; ordinary claims still skip the destination.
            #expect(try JobsTable.claimProbe(destination: Self.destination, generation: generation, queues: ["default"],
                                             worker: UUID(), leaseMilliseconds: 30_000, on: db) == nil)
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: 30_000, on: db).isEmpty)
            let probe = try #require(try JobsTable.claimProbe(destination: Self.destination, generation: generation, queues: ["default"],
                                                              worker: worker, leaseMilliseconds: 30_000, on: db))
            #expect(probe.id == ids[0] && probe.attempt == 1)
            #expect(try BreakersTable.probeResult(destination: Self.destination, generation: generation, succeeded: true,
                                                  worker: "w", policy: Self.policy, jitter: 1, on: db) == "closed")
            try Self.keep(db)
            let row = try #require(try Self.row(db))
            #expect(row.state == "closed" && row.consecutiveFailures == 0 && row.cooldownMilliseconds == 0)

            var notes: [PostgresNotification] = []
            let end = ContinuousClock.now + .seconds(10)
            while !notes.contains(where: { $0.channel == "courier_jobs" }) && ContinuousClock.now < end {
                notes += try listener.waitForNotifications(timeout: .milliseconds(200))
            }
            #expect(notes.contains { $0.channel == "courier_jobs" }, "closing wakes idle workers")
            #expect(notes.contains { $0.channel == "courier_breakers" && $0.payload == Self.destination + " closed" })
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: 30_000, on: db)
            #expect(Set(claimed.map(\.id)) == Set(ids.dropFirst()))
            #expect(claimed.allSatisfy { $0.attempt == 1 }, "waiting while open used no attempts")
        }
    }

    @Test func aFailedProbeReopensWithTheCooldownDoubledUpToTheMaximum() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try Self.enqueue(db, 3)
            var p = Self.policy
            p.cooldownMilliseconds = 1000
            p.cooldownMaxMilliseconds = 3000
            try Self.trip(db, cooldownMilliseconds: 1000)
            #expect(try Self.row(db)?.openForMilliseconds == 1000)

            func failProbe(jitter: Double) throws -> Row {
                try Self.elapseCooldown(db)
                let generation = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(),
                                                                         probeLeaseMilliseconds: 30_000, on: db))
                #expect(try BreakersTable.probeResult(destination: Self.destination, generation: generation, succeeded: false,
                                                      worker: "w", policy: p, jitter: jitter, on: db) == "open")
                return try #require(try Self.row(db))
            }
            var row = try failProbe(jitter: 1)
            #expect(row.cooldownMilliseconds == 2000 && row.openForMilliseconds == 2000)
            row = try failProbe(jitter: 1)
            #expect(row.cooldownMilliseconds == 3000 && row.openForMilliseconds == 3000, "4 s capped at the 3 s maximum")
            row = try failProbe(jitter: 1.2)
            #expect(row.cooldownMilliseconds == 3000, "jitter never exceeds the maximum")

            // The jitter factor scales only the open period; the nominal cooldown doubles
            // (0020: the factors used to compound across failed probes).
            try TestRows(db).setCooldown(Self.destination, .seconds(1))
            row = try failProbe(jitter: 0.8)
            #expect(row.cooldownMilliseconds == 2000 && row.openForMilliseconds == 1600)
            try TestRows(db).setCooldown(Self.destination, .seconds(1))
            row = try failProbe(jitter: 1.2)
            #expect(row.cooldownMilliseconds == 2000 && row.openForMilliseconds == 2400)
            row = try failProbe(jitter: 1.2)
            #expect(row.cooldownMilliseconds == 3000 && row.openForMilliseconds == 3000, "4 s nominal capped at 3 s, 3.6 s open capped too")
            // As in BreakerStateMachine, the factor is not clamped to the base: 0.1 × 2 s.
            try TestRows(db).setCooldown(Self.destination, .seconds(1))
            row = try failProbe(jitter: 0.1)
            #expect(row.cooldownMilliseconds == 2000 && row.openForMilliseconds == 200)

            // The jobs stay held through every reopening, attempts untouched.
            let stillHeld = try db.query("select count(*)::bigint from courier.jobs where id = any(\(ids)) and held_since is not null and attempt = 0")
                .rows[0].decode(0, as: Int.self)
            #expect(stillHeld == ids.count)
            #expect(try Self.events(db).filter { $0.reason == "probe_failed" }.count == 7)
        }
    }

    @Test func anExpiredProbeLeaseLetsAnotherWorkerProbe() throws {
        try CourierTestDatabase.with { (_, db) throws in
            _ = try Self.enqueue(db, 2)
            try Self.trip(db)
            try Self.elapseCooldown(db)
            let hung = UUID()
            let rescuer = UUID()
            let first = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: hung,
                                                                probeLeaseMilliseconds: 30_000, on: db))
            #expect(try BreakersTable.tryProbe(destination: Self.destination, worker: rescuer, probeLeaseMilliseconds: 30_000, on: db) == nil,
                    "the probe is held")
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db).isEmpty)
            // The probe hangs past its lease.
            try TestRows(db).expireProbeLease(Self.destination)
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db) == [Self.destination])
            let second = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: rescuer,
                                                                 probeLeaseMilliseconds: 30_000, on: db))
            #expect(second > first)
            #expect(try Self.row(db)?.probeOwner == rescuer.uuidString.lowercased())
            // The hung probe's late verdict is fenced off; the new one applies.
            #expect(try BreakersTable.probeResult(destination: Self.destination, generation: first, succeeded: true,
                                                  worker: hung.uuidString, policy: Self.policy, jitter: 1, on: db) == nil)
            #expect(try Self.row(db)?.state == "half_open")
            #expect(try BreakersTable.probeResult(destination: Self.destination, generation: second, succeeded: true,
                                                  worker: rescuer.uuidString, policy: Self.policy, jitter: 1, on: db) == "closed")
            #expect(try Self.events(db).map(\.reason) == ["consecutive_failures", "cooldown_elapsed", "probe_lease_expired", "probe_succeeded"])
        }
    }

    // MARK: - Operator actions

    @Test func aForcedOpenStaysOpenUntilClosedOrReset() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try Self.enqueue(db, 2)
            let healthy = try Self.enqueue(db, 1, url: Self.healthyURL)
            #expect(try BreakersTable.force(destination: Self.destination, action: .open, actor: "ops", on: db) == "closed")
            var row = try #require(try Self.row(db))
            #expect(row.state == "open" && row.forced)
            // No cooldown ever ends it: even with open_until in the past, nobody may probe.
            try TestRows(db).elapseCooldown(Self.destination, ago: .seconds(1))
            #expect(try BreakersTable.tryProbe(destination: Self.destination, worker: UUID(), probeLeaseMilliseconds: 1000, on: db) == nil)
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db).isEmpty)
            #expect(try Self.report(db, successes: 100) == "open", "evidence does not close a forced breaker")
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: 30_000, on: db).map(\.id) == healthy)

            #expect(try BreakersTable.force(destination: Self.destination, action: .close, actor: "ops", on: db) == "open")
            row = try #require(try Self.row(db))
            #expect(row.state == "closed" && !row.forced)
            #expect(Set(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: 30_000, on: db).map(\.id)) == Set(ids))
        }
    }

    /// held_ms, for the next attempt's span (courier.breaker_held): the time a job was due while
    /// held, summed on release and by a probe's claim, read by the claim, cleared by the retry.
    @Test func theTimeAJobWasDueWhileHeldReachesItsNextAttemptAndEndsWithIt() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try Self.enqueue(db, 3)
            let (dueBefore, dueDuring, scheduled) = (ids[0], ids[1], ids[2])
            try Self.trip(db)
            // Held for 90 s; the first job was due before, the second fell due 30 s ago, the third is due in an hour.
            try db.query("update courier.jobs set held_since = now() - interval '90 seconds'")
            try db.query("update courier.jobs set run_at = now() - interval '100 seconds' where id = \(dueBefore)")
            try db.query("update courier.jobs set run_at = now() - interval '30 seconds' where id = \(dueDuring)")
            try db.query("update courier.jobs set run_at = now() + interval '1 hour' where id = \(scheduled)")
            func heldMs(_ id: Int64) throws -> Int64? {
                try db.query("select held_ms from courier.jobs where id = \(id)").rows[0].decode(0, as: Int64?.self)
            }
            #expect(try heldMs(dueBefore) == nil, "nothing is written while the job is held")
            try BreakersTable.force(destination: Self.destination, action: .close, on: db)
            try Self.keep(db)
            let released = try ids.map(heldMs)
            #expect((90_000...95_000).contains(released[0] ?? 0), "\(released)")
            #expect((30_000...35_000).contains(released[1] ?? 0), "\(released)")
            #expect(released[2] == 0, "time held before run_at cost the job nothing")

            let worker = UUID()
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: db)
            let job = try #require(claimed.first { $0.id == dueBefore })
            #expect(job.heldMilliseconds == released[0], "the claim reads it with the job")
            #expect(!job.claimedThroughGate)
            try JobsTable.retry([.init(id: job.id, attempt: job.attempt, lease: job.lease, delayMilliseconds: 0, errorJSON: "{}")],
                                worker: worker, on: db)
            #expect(try heldMs(dueBefore) == nil, "the attempt that ends takes its hold with it")

            // A probe's job is sent while held: its claim counts the hold so far and restarts the count.
            try Self.trip(db)
            try db.query("update courier.jobs set held_since = now() - interval '60 seconds', run_at = now() - interval '60 seconds' where id = \(dueBefore)")
            try Self.elapseCooldown(db)
            let generation = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: worker,
                                                                     probeLeaseMilliseconds: 30_000, on: db))
            let probe = try #require(try JobsTable.claimProbe(destination: Self.destination, generation: generation,
                                                              queues: ["default"], worker: worker, leaseMilliseconds: 30_000, on: db))
            #expect(probe.id == dueBefore)
            #expect((60_000...65_000).contains(probe.heldMilliseconds ?? 0), "\(String(describing: probe.heldMilliseconds))")
            let restarted = try db.query("select extract(epoch from now() - held_since) from courier.jobs where id = \(dueBefore)")
                .rows[0].decode(0, as: Double.self)
            #expect(restarted < 5, "the hold is counted on from the probe's claim, never twice")
        }
    }

    @Test func closeAndResetReleaseHeldJobsAndClearCounts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try Self.enqueue(db, 3)
            var later = EnqueueRequest(url: "https://down.example.com/tomorrow")
            later.runAt = Date().addingTimeInterval(86_400)
            let tomorrow = try JobsTable.enqueue(later, on: db)
            try Self.trip(db)
            try BreakersTable.pause(destination: Self.destination, milliseconds: 3_600_000, on: db)
            #expect(try BreakersTable.force(destination: Self.destination, action: .close, on: db) == "open")
            var row = try #require(try Self.row(db))
            #expect(row.state == "closed" && row.consecutiveFailures == 0 && row.cooldownMilliseconds == 60_000,
                    "close keeps the escalated cooldown")
            #expect(try ids.allSatisfy { try Self.jobState(db, $0).runAt <= Date().addingTimeInterval(5) }, "held jobs run now")
            #expect(try Self.jobState(db, tomorrow).runAt > Date().addingTimeInterval(80_000), "a job scheduled for tomorrow stays scheduled")
            #expect(try BreakersTable.list(destination: Self.destination, on: db).first?.notBefore != nil, "close keeps a Retry-After pause")

            try Self.trip(db)
            #expect(try BreakersTable.force(destination: Self.destination, action: .reset, on: db) == "open")
            row = try #require(try Self.row(db))
            #expect(row.state == "closed" && row.cooldownMilliseconds == 0)
            #expect(try BreakersTable.list(destination: Self.destination, on: db).first?.notBefore == nil, "reset clears the pause")
            #expect(try Self.jobState(db, tomorrow).runAt > Date().addingTimeInterval(80_000))
        }
    }

    @Test func aBadOperatorActionIsRefusedNamingTheParameter() throws {
        try CourierTestDatabase.with { (_, db) throws in
            do {
                try db.query("select courier.breaker_force(\(Self.destination)::text, 'explode'::text)")
                Issue.record("an unknown action must be refused")
            } catch let error as PostgresError {
                #expect(error.sqlState == "22023")
                #expect("\(error)".contains("action"))
            }
            #expect(try Self.row(db) == nil, "nothing was created")
        }
    }

    // MARK: - History

    @Test func everyTransitionIsRecordedWithItsReasonAndWorker() throws {
        try CourierTestDatabase.with { (database, db) throws in
            _ = try Self.enqueue(db, 1)
            let listener = try database.connect()
            defer { listener.close() }
            try listener.listen("courier_breakers")
            let a = UUID()
            let b = UUID()
            try Self.trip(db)                                                      // closed -> open
            try Self.elapseCooldown(db)
            var g = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: a, probeLeaseMilliseconds: 30_000, on: db))
            try BreakersTable.probeResult(destination: Self.destination, generation: g, succeeded: false, worker: a.uuidString.lowercased(),
                                          policy: Self.policy, jitter: 1, on: db)  // half_open -> open
            try Self.elapseCooldown(db)
            _ = try BreakersTable.tryProbe(destination: Self.destination, worker: a, probeLeaseMilliseconds: 30_000, on: db)
            try TestRows(db).expireProbeLease(Self.destination)
            g = try #require(try BreakersTable.tryProbe(destination: Self.destination, worker: b, probeLeaseMilliseconds: 30_000, on: db))
            try BreakersTable.probeResult(destination: Self.destination, generation: g, succeeded: true, worker: b.uuidString.lowercased(),
                                          policy: Self.policy, jitter: 1, on: db)  // half_open -> closed
            try BreakersTable.force(destination: Self.destination, action: .open, actor: "jobctl:ops", on: db)
            try BreakersTable.force(destination: Self.destination, action: .close, actor: "jobctl:ops", on: db)
            try BreakersTable.force(destination: Self.destination, action: .reset, actor: "jobctl:ops", on: db)

            let al = a.uuidString.lowercased()
            let bl = b.uuidString.lowercased()
            #expect(try Self.events(db) == [
                Event(from: "closed", to: "open", reason: "consecutive_failures", worker: "w1"),
                Event(from: "open", to: "half_open", reason: "cooldown_elapsed", worker: al),
                Event(from: "half_open", to: "open", reason: "probe_failed", worker: al),
                Event(from: "open", to: "half_open", reason: "cooldown_elapsed", worker: al),
                Event(from: "half_open", to: "half_open", reason: "probe_lease_expired", worker: bl),
                Event(from: "half_open", to: "closed", reason: "probe_succeeded", worker: bl),
                Event(from: "closed", to: "open", reason: "operator_open", worker: "jobctl:ops"),
                Event(from: "open", to: "closed", reason: "operator_close", worker: "jobctl:ops"),
                Event(from: "closed", to: "closed", reason: "operator_reset", worker: "jobctl:ops"),
            ])
            let generations = try db.query("""
                select generation, at from courier.breaker_events where destination = \(Self.destination) order by id
                """).rows.map { try $0.decode(0, as: Int64.self) }
            #expect(generations == generations.sorted() && Set(generations).count == generations.count,
                    "each transition has its own, increasing generation: \(generations)")
            #expect(generations.last == (try Self.row(db))?.generation)
            var notes: [PostgresNotification] = []
            let end = ContinuousClock.now + .seconds(10)
            while notes.count < 9 && ContinuousClock.now < end {
                notes += try listener.waitForNotifications(timeout: .milliseconds(200))
            }
            #expect(notes.map(\.payload) == ["open", "half_open", "open", "half_open", "half_open", "closed", "open", "closed", "closed"]
                .map { Self.destination + " " + $0 }, "every transition is announced")
        }
    }
}

/// A reusable barrier: `wait()` returns once `parties` threads have called it.
final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let parties: Int
    private var waiting = 0
    private var phase = 0

    init(parties: Int) { self.parties = parties }

    func wait() {
        condition.lock()
        defer { condition.unlock() }
        let myPhase = phase
        waiting += 1
        if waiting == parties {
            waiting = 0
            phase += 1
            condition.broadcast()
            return
        }
        while phase == myPhase { condition.wait() }
    }
}

/// A value guarded by a lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
