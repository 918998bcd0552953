import CourierCore
import CourierStore
import Foundation
import Postgres

/// The claim loop: leases batches sized to the free slots and starts them.
extension Worker {
    func claimLoop() {
        let session = makeSession()
        defer { session.close() }
        let queues = configuration.queues
        var next = 0
        let fullBatch = min(configuration.claimBatch, configuration.concurrency)
        waitForSchema(session)
        // Per-queue retry settings before the first claim; the maintenance thread refreshes them.
        if case .success(let rows) = session.run({ try QueueSettingsTable.all(on: $0) }) {
            lock.withLock { queuePolicies.update(rows) }
        }
        while !isStopping {
            let (free, running) = lock.withLock { (configuration.concurrency - inFlight.count, inFlight.count) }
            // Batch claims while busy; claim at once when idle so pickup stays fast.
            let threshold = running == 0 ? 1 : max(1, fullBatch / 2)
            let backlog = acknowledgements.count > configuration.ackBatch * 4
            var claimedFull = false
            if free >= threshold && !backlog {
                var triedQueues = 0
                while triedQueues < queues.count && !isStopping {
                    let queue = queues[next % queues.count]
                    next += 1
                    triedQueues += 1
                    let want = min(configuration.concurrency - inFlightCount, configuration.claimBatch)
                    guard want > 0 else { break }
                    let result = session.run { connection in
                        try JobsTable.claim(queue: queue, limit: want, worker: self.id,
                                            leaseMilliseconds: Int(configuration.lease.milliseconds), on: connection)
                    }
                    guard case .success(let jobs) = result else { break }
                    metrics.recordClaim(batch: jobs.count)
                    start(jobs)
                    if jobs.count == want { claimedFull = true; break }
                }
            }
            if claimedFull { continue }
            claimSignal.wait(timeout: nextClaimWait())
        }
    }

    /// Returns once the database has every migration this worker was built with (or the
    /// worker is stopping). A worker rolled out before `jobctl migrate` ran would fail on
    /// every statement that needs the new schema; instead it claims nothing, says once
    /// what is missing, reports not ready, and starts by itself when the migrations land.
    func waitForSchema(_ session: DatabaseSession) {
        var reported = false
        while !isStopping {
            if case .success(let applied) = session.run({ try Migrator.appliedVersions($0) }) {
                let missing = Migration.all.filter { !applied.contains($0.version) }.map(\.name)
                lock.withLock {
                    missingMigrationNames = missing
                    schemaReady = missing.isEmpty
                }
                if missing.isEmpty {
                    maintenanceSignal.signal()
                    if reported { logger.info("the schema is up to date: claiming jobs") }
                    return
                }
                if !reported {
                    logger.error("the database lacks migrations this worker needs; run 'jobctl migrate'. Claiming nothing until then",
                                 [("missing", missing.joined(separator: ","))])
                    reported = true
                }
            }
            claimSignal.wait(timeout: .seconds(2))
        }
    }

    /// How long the claim loop may sleep: the poll interval, or less when a retry
    /// this worker scheduled falls due sooner.
    func nextClaimWait() -> Duration {
        lock.withLock {
            guard let due = nextRetryDue else { return configuration.pollInterval }
            let now = ContinuousClock.now
            if due <= now {
                nextRetryDue = nil
                return .milliseconds(1)
            }
            return min(configuration.pollInterval, due - now + .milliseconds(5))
        }
    }

    func start(_ jobs: [ClaimedJob], probeGeneration: Int64? = nil) {
        guard !jobs.isEmpty else { return }
        lock.withLock {
            for job in jobs { inFlight[job.id] = InFlightJob(job: job, probeGeneration: probeGeneration) }
        }
        for job in jobs {
            let task = Task { [self] in await self.execute(job) }
            lock.withLock { inFlight[job.id]?.task = task }
        }
    }
}
