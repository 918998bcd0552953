import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// Services driven one round at a time through `runOnce(now:)`, against a real database.
@Suite struct ServiceTests {
    func session(_ database: TestDatabase) -> StoreSession {
        StoreSession(configuration: DatabaseConfiguration(connectionString: database.url), pause: { _ in })
    }

    func configuration(_ database: TestDatabase) -> WorkerConfiguration {
        WorkerConfiguration(database: DatabaseConfiguration(connectionString: database.url))
    }

    @Test func aResultTheDatabaseRefusesIsDroppedAndTheOthersAreWritten() throws {
        try CourierTestDatabase.with { database, db in
            let worker = UUID()
            let first = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/a"), on: db)
            let second = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/b"), on: db)
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: db)
            #expect(Set(claimed.map(\.id)) == [first, second])
            let logs = LogCapture()
            let metrics = WorkerMetrics()
            let completer = Completer(configuration: .init(configuration(database), worker: worker), session: session(database),
                                      logger: Logger(level: .debug, sink: { logs.append($0) }), metrics: metrics,
                                      jitter: { 1 }, clock: { .now })
            completer.append(.success(.init(id: first, attempt: 1, lease: 1, status: 200, durationMilliseconds: 1)))
            // Its error entry is not JSON: the database refuses it, and with it the batch.
            completer.append(.deadLetter(.init(id: second, attempt: 1, lease: 1, reason: .permanent, errorJSON: "{not json",
                                               lastClass: .client, lastStatus: 400)))
            let later = ContinuousClock.now + .seconds(1)
            for _ in 0..<completer.configuration.triesBeforeSplit {
                _ = completer.runOnce(now: later)
            }
            #expect(completer.count == 0)
            #expect(try JobsTable.get(id: first, on: db)?.status == .succeeded)
            #expect(try JobsTable.get(id: second, on: db)?.status == .running, "the refused result changed nothing; the lease will expire")
            #expect(metrics.snapshot().droppedAcknowledgements == 1)
            #expect(logs.all.contains { $0.contains("dropped a result") && $0.contains("job=\(second)") })
        }
    }

    /// DESIGN.md invariant 2: a lease stays renewed until its result is written. The
    /// Completer lists the leases of the results it holds, through failed writes, until they
    /// are written; the worker renews those with its running jobs'.
    @Test func aResultWaitingToBeWrittenKeepsItsLeaseListedUntilWritten() throws {
        try CourierTestDatabase.with { database, db in
            let worker = UUID()
            let id = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/a"), on: db)
            let job = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db).first)
            let lease = WorkerStateMachine.Lease(id: id, token: job.lease)
            let later = ContinuousClock.now + .seconds(1)
            // The acknowledgement connection cannot reach the database (nothing listens on port 9).
            let cutOff = StoreSession(configuration: DatabaseConfiguration(connectionString: "postgresql://127.0.0.1:9/none?connect_timeout=1"),
                                      pause: { _ in })
            let stalled = Completer(configuration: .init(configuration(database), worker: worker), session: cutOff,
                                    logger: Logger(level: .error, sink: { _ in }), metrics: WorkerMetrics(), jitter: { 1 }, clock: { .now })
            stalled.append(.success(.init(id: id, attempt: job.attempt, lease: job.lease, status: 200, durationMilliseconds: 1)))
            stalled.append(.destinationPause(destination: job.destination, milliseconds: 1))
            #expect(stalled.unwrittenLeases == [lease])
            _ = stalled.runOnce(now: later)
            #expect(stalled.count == 2, "the write failed: the results wait")
            #expect(stalled.unwrittenLeases == [lease], "and so the lease is still listed for renewal")
            // The same result through a connection that works: written, and no longer listed.
            let working = Completer(configuration: .init(configuration(database), worker: worker), session: session(database),
                                    logger: Logger(level: .error, sink: { _ in }), metrics: WorkerMetrics(), jitter: { 1 }, clock: { .now })
            working.append(.success(.init(id: id, attempt: job.attempt, lease: job.lease, status: 200, durationMilliseconds: 1)))
            _ = working.runOnce(now: later)
            #expect(working.count == 0)
            #expect(working.unwrittenLeases.isEmpty)
            #expect(try JobsTable.get(id: id, on: db)?.status == .succeeded)
        }
    }

    @Test func aBatchWaitsForItsFlushIntervalUnlessFull() throws {
        try CourierTestDatabase.with { database, _ in
            var c = Completer.Configuration(configuration(database), worker: UUID())
            c.flushInterval = .milliseconds(50)
            c.batch = 2
            let start = ContinuousClock.now
            let completer = Completer(configuration: c, session: session(database), logger: Logger(level: .error, sink: { _ in }),
                                      metrics: WorkerMetrics(), jitter: { 1 }, clock: { start })
            #expect(completer.runOnce(now: start) == .seconds(1), "nothing queued: a long wait")
            completer.append(.handBack(id: 1, lease: 1))
            #expect(completer.runOnce(now: start + .milliseconds(10)) == .milliseconds(40))
            #expect(completer.count == 1)
            completer.append(.handBack(id: 2, lease: 1))
            _ = completer.runOnce(now: start + .milliseconds(10))
            #expect(completer.count == 0, "a full batch is written at once")
        }
    }

    @Test func aResultQueuedWhileABatchIsWrittenWaitsItsOwnInterval() throws {
        try CourierTestDatabase.with { database, _ in
            var c = Completer.Configuration(configuration(database), worker: UUID())
            c.flushInterval = .milliseconds(50)
            let clock = ManualClock()
            let start = clock.now
            let completer = Completer(configuration: c, session: session(database), logger: Logger(level: .error, sink: { _ in }),
                                      metrics: WorkerMetrics(), jitter: { 1 }, clock: { clock.now })
            completer.append(.handBack(id: 1, lease: 1))
            clock.advance(.milliseconds(60))
            // The completer reads the clock once as it starts each write; on the first of
            // those reads a result arrives, as one does from a job ending during the write.
            clock.onNextRead { completer.append(.handBack(id: 2, lease: 1)) }
            let wait = completer.runOnce(now: start + .milliseconds(60))
            #expect(completer.count == 1, "the result that arrived during the write is not written at once")
            #expect(wait == .milliseconds(50), "it waits its own flush interval")
            clock.advance(.milliseconds(50))
            _ = completer.runOnce(now: start + .milliseconds(110))
            #expect(completer.count == 0, "and is written once it has waited")
        }
    }

    @Test func theHeartbeaterRenewsHeldLeasesAndReportsCancellations() throws {
        try CourierTestDatabase.with { database, db in
            let holder = FakeHolder()
            let id = UUID()
            let registration = WorkersTable.Registration(id: id, host: "test", pid: 1, queues: ["default"], concurrency: 1,
                                                         version: "test", heartbeatIntervalMilliseconds: 1000)
            let heartbeater = Heartbeater(configuration: .init(leases: LeaseSettings(configuration(database)), registration: registration),
                                          session: session(database), holder: holder)
            let job = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/a"), on: db)
            _ = try JobsTable.claim(queue: "default", limit: 1, worker: id, leaseMilliseconds: 1000, on: db)
            holder.held = [job]
            let before = try db.query("select lease_expires_at from courier.jobs where id = \(job)").rows[0].decode(0, as: Date.self)
            _ = heartbeater.runOnce(now: .now)
            let after = try db.query("select lease_expires_at from courier.jobs where id = \(job)").rows[0].decode(0, as: Date.self)
            #expect(after > before, "the lease was renewed")
            #expect(holder.renewed == [WorkerStateMachine.Lease(id: job, token: 1)], "and the holder told which lease was proven")
            let live = try WorkersTable.live(on: db)
            #expect(live.count == 1, "the worker registered itself")
            try TestRows(db).requestCancel(.id(job))
            heartbeater.requestCancelCheck()
            _ = heartbeater.runOnce(now: .now + .milliseconds(10))
            #expect(holder.cancelled == [job])
            heartbeater.finish()
            #expect(try WorkersTable.live(on: db).isEmpty, "finish deregisters")
        }
    }
}

extension ServiceTests {
    @Test func thePrunerDeletesInBoundedBatchesAndComesBackSoonWhileBehind() throws {
        try CourierTestDatabase.with { database, db in
            try db.execute("""
                insert into courier.completed_jobs (id, kind, queue, destination, method, url, attempt, created_at, finished_at)
                select g, 'http', 'default', 'https://e.com:443', 'POST', 'https://e.com/', 1, now() - interval '3 days', now() - interval '2 days'
                from generate_series(1, 2500) g
                """)
            var config = Pruner.Configuration(configuration(database))
            config.batch = 1000
            config.budget = .zero
            let pruner = Pruner(configuration: config, session: session(database))
            let start = ContinuousClock.now
            #expect(pruner.runOnce(now: start) == config.interval, "the first round waits a full interval")
            #expect(pruner.runOnce(now: start + config.interval) == config.catchUpInterval, "out of budget with more due: back soon")
            #expect(try db.query("select count(*)::int from courier.completed_jobs").rows[0].decode(0, as: Int.self) == 1500,
                    "one bounded batch per round when the budget is spent")
            _ = pruner.runOnce(now: start + config.interval + config.catchUpInterval)
            _ = pruner.runOnce(now: start + config.interval + config.catchUpInterval * 2)
            #expect(try db.query("select count(*)::int from courier.completed_jobs").rows[0].decode(0, as: Int.self) == 0)
            pruner.finish()
        }
    }

    @Test func isolatedFailuresOnManyWorkersBetweenSuccessesDoNotTripTheBreaker() throws {
        try CourierTestDatabase.with { database, db in
            let destination = "http://127.0.0.1:9"
            let config = configuration(database)
            let threshold = config.breakerPolicy.failureThreshold
            // More workers than the threshold, each seeing thousands of successes and then one failure.
            let reporters = (0...threshold).map { _ in
                BreakerReporter(configuration: .init(config, worker: UUID()), session: session(database),
                                logger: Logger(level: .error, sink: { _ in }), jitteredCooldown: { $0.cooldown })
            }
            let ok = Classification.success(status: 200)
            let failed = Classification(succeeded: false, errorClass: .server, status: 500, message: "HTTP 500",
                                        mayHaveBeenDelivered: true, retryable: true)
            #expect(failed.countsAsBreakerFailure)
            var now = ContinuousClock.now
            for reporter in reporters {
                for _ in 0..<1000 { reporter.note(destination, ok, now: now) }
                now += .milliseconds(250)
                reporter.report(now: now)   // success only: nothing written yet, nothing forgotten
            }
            for reporter in reporters {
                reporter.note(destination, failed, now: now)
                now += .milliseconds(250)
                reporter.report(now: now)
            }
            let row = try #require(try BreakersTable.list(destination: destination, on: db).first)
            #expect(row.state == "closed", "each failure came after successes on its worker")
        }
    }
}

extension ServiceTests {
    /// Opens the breaker of `destination` with one waiting job, its cooldown already over, so a probe is due at once.
    func openBreaker(_ destination: String, on db: PostgresConnection, policy: BreakerPolicy) throws {
        _ = try JobsTable.enqueue(EnqueueRequest(url: destination + "/probe"), on: db)
        var report = policy.reportPolicy
        report.cooldownMilliseconds = 1
        let state = try BreakersTable.report(destination: destination, successes: 0, failures: policy.failureThreshold,
                                             trailingFailures: policy.failureThreshold, worker: "test", policy: report, on: db)
        #expect(state == "open")
        try TestRows(db).elapseCooldown(destination)
    }

    @Test func theHeartbeaterRenewsTheProbeLeaseOfARunningProbe() throws {
        try CourierTestDatabase.with { database, db in
            let config = configuration(database)
            let destination = "http://127.0.0.1:9"
            try openBreaker(destination, on: db, policy: config.breakerPolicy)
            let id = UUID()
            // A probe lease of 2 s, shorter than the request it guards.
            let generation = try #require(try BreakersTable.tryProbe(destination: destination, worker: id, probeLeaseMilliseconds: 2000, on: db))
            let holder = FakeHolder()
            holder.probes = [(destination, generation)]
            let registration = WorkersTable.Registration(id: id, host: "test", pid: 1, queues: ["default"], concurrency: 1,
                                                         version: "test", heartbeatIntervalMilliseconds: 1000)
            let heartbeater = Heartbeater(configuration: .init(leases: LeaseSettings(config), registration: registration), session: session(database), holder: holder)
            _ = heartbeater.runOnce(now: .now)
            let left = try db.query("""
                select extract(epoch from probe_lease_until - now())::float8 from courier.breakers where destination = \(destination)
                """).rows[0].decode(0, as: Double.self)
            #expect(left > 20, "renewed to the configured probe lease (\(config.breakerPolicy.probeLease)), not left at 2 s")
            #expect(try !BreakersTable.renewProbe(destination: destination, generation: generation - 1, worker: id,
                                                  probeLeaseMilliseconds: 1000, on: db), "a stale generation renews nothing")
            #expect(try !BreakersTable.renewProbe(destination: destination, generation: generation, worker: UUID(),
                                                  probeLeaseMilliseconds: 1000, on: db), "nor another worker's")
            heartbeater.finish()
        }
    }

    @Test func noProbeBeforeTheDestinationsRetryAfter() throws {
        try CourierTestDatabase.with { database, db in
            let config = configuration(database)
            let destination = "http://127.0.0.1:9"
            try openBreaker(destination, on: db, policy: config.breakerPolicy)
            // The last probe was answered 429 with Retry-After: 3600.
            try BreakersTable.pause(destination: destination, milliseconds: 3_600_000, on: db)
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db).isEmpty)
            #expect(try BreakersTable.tryProbe(destination: destination, worker: UUID(), probeLeaseMilliseconds: 1000, on: db) == nil)
            try TestRows(db).setNotBefore(nil, .seconds(-1))
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db) == [destination])
            #expect(try BreakersTable.tryProbe(destination: destination, worker: UUID(), probeLeaseMilliseconds: 1000, on: db) != nil)
        }
    }
}

final class FakeHolder: LeaseHolder, @unchecked Sendable {
    private let lock = NSLock()
    private var _held: [Int64] = []
    private var _cancelled: [Int64] = []
    var held: [Int64] {
        get { lock.withLock { _held } }
        set { lock.withLock { _held = newValue } }
    }
    var cancelled: [Int64] { lock.withLock { _cancelled } }
    /// Held jobs, each on its first attempt.
    var heldLeases: [WorkerStateMachine.Lease] { held.map { WorkerStateMachine.Lease(id: $0, token: 1) } }
    private var _renewed: [WorkerStateMachine.Lease] = []
    var renewed: [WorkerStateMachine.Lease] { lock.withLock { _renewed } }
    func leasesRenewed(_ renewed: [WorkerStateMachine.Lease], sentAt: ContinuousClock.Instant) {
        lock.withLock { _renewed = renewed }
    }
    var probes: [(destination: String, generation: Int64)] = []
    var heldProbes: [(destination: String, generation: Int64)] { lock.withLock { probes } }
    var isStopping: Bool { false }
    func cancelRequested(_ ids: [Int64]) { lock.withLock { _cancelled += ids } }
}

extension ServiceTests {
    /// The reclaimer truncates a drained slot of courier.jobs and moves the next slot's waiting
    /// jobs to jobs_parked, in batches while they come back full; before the schema allows it
    /// (mayRun false) it does nothing.
    @Test func theReclaimerTruncatesDrainedSlotsAndParksTheNextSlotsJobs() throws {
        try CourierTestDatabase.with { database, db in
            // Far enough from a slot boundary that "current" and "next" hold for the test.
            let intoSlot = try db.query("select mod(date_part('epoch', now())::numeric, 15)::float8").rows[0].decode(0, as: Double.self)
            if intoSlot > 11 { Thread.sleep(forTimeInterval: 15.5 - intoSlot) }
            let current = try db.query("select courier.job_slot_of(now())::int").rows[0].decode(0, as: Int.self)
            let (next, drained) = ((current + 1) % 4, (current + 2) % 4)
            try JobsPartitions.insert(2000, slot: drained, runInSeconds: 0, on: db)
            try db.execute("delete from courier.jobs where slot = \(drained)::smallint")
            try JobsPartitions.insert(5, slot: next, runInSeconds: 3600, on: db)
            func heap(_ slot: Int) throws -> Int { try JobsPartitions.heapBytes(slot: slot, on: db) }
            func parked() throws -> Int { try db.query("select count(*)::int from courier.jobs where slot = -1").rows[0].decode(0, as: Int.self) }
            #expect(try heap(drained) > 0)

            let idle = Reclaimer(session: session(database), logger: Logger(level: .error, sink: { _ in }), mayRun: { false })
            _ = idle.runOnce(now: .now)
            #expect(try heap(drained) > 0 && parked() == 0, "nothing before the schema allows it")
            idle.finish()

            var config = Reclaimer.Configuration()
            config.moveLimit = 2
            let reclaimer = Reclaimer(configuration: config, session: session(database), logger: Logger(level: .error, sink: { _ in }),
                                      mayRun: { true })
            let start = ContinuousClock.now
            #expect(reclaimer.runOnce(now: start) == config.interval)
            #expect(try heap(drained) == 0, "the drained slot is truncated")
            #expect(try parked() == 5, "batches of 2 while they come back full: all 5 moved in one round")
            #expect(reclaimer.runOnce(now: start + .milliseconds(10)) < config.interval, "not again before the interval")
            reclaimer.finish()
        }
    }
}
