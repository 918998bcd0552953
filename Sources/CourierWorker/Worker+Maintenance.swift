import CourierCore
import CourierStore
import Foundation
import Postgres

/// Heartbeats, lease renewal, cancellation, rescue, pruning, statistics and the graceful shutdown.
extension Worker {
    func maintenanceLoop() {
        let session = makeSession()
        defer { session.close() }
        let registration = WorkersTable.Registration(
            id: id, host: ProcessInfo.processInfo.hostName, pid: Int(getpid()), queues: configuration.queues,
            concurrency: configuration.concurrency, version: CourierVersion.current,
            heartbeatIntervalMilliseconds: Int(configuration.heartbeatInterval.milliseconds))
        var registered = false
        var lastHeartbeat = ContinuousClock.now - .seconds(3600)
        var lastRescue = ContinuousClock.now - .seconds(3600)
        var lastPrune = ContinuousClock.now
        var lastCancelCheck = ContinuousClock.now
        var lastStatsFlush = ContinuousClock.now
        var lastSettingsRead = ContinuousClock.now - .seconds(3600)
        let rescueInterval = max(.seconds(1), min(configuration.lease / 4, .seconds(15)))
        // Every statement here needs the schema: wait for the claim thread to find it complete.
        while !isStopping && !lock.withLock({ schemaReady }) {
            maintenanceSignal.wait(timeout: .milliseconds(250))
        }
        guard lock.withLock({ schemaReady }) else {
            // Stopped before the schema was there: nothing was claimed, nothing registered.
            lock.withLock { drained = true }
            ackSignal.signal()
            claimSignal.signal()
            return
        }
        while !isStopping {
            let now = ContinuousClock.now
            if !registered {
                if case .success = session.run({ try WorkersTable.register(registration, on: $0) }) { registered = true }
            }
            let held = lock.withLock { Array(inFlight.keys) }
            if now - lastHeartbeat >= configuration.heartbeatInterval {
                let result = session.run { connection -> [Int64] in
                    if !(try WorkersTable.heartbeat(id: self.id, stopping: false, on: connection)) {
                        try WorkersTable.register(registration, on: connection)
                    }
                    return try JobsTable.extendLeases(ids: held, worker: self.id,
                                                      leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: connection)
                }
                if case .success(let cancelled) = result {
                    lastHeartbeat = now
                    cancelRunning(cancelled)
                }
            } else if !held.isEmpty && now - lastCancelCheck >= .seconds(1) {
                lastCancelCheck = now
                // Cancellation reaches a running job within a second even if a NOTIFY was missed.
                if case .success(let cancelled) = session.run({ try JobsTable.cancelRequested(worker: self.id, on: $0) }) {
                    cancelRunning(cancelled)
                }
            }
            if now - lastRescue >= rescueInterval {
                if case .success(let result) = session.run({ connection -> JobsTable.RescueResult in
                    try JobsTable.releaseStaleHolds(on: connection)
                    return try JobsTable.rescueExpired(on: connection)
                }) {
                    lastRescue = now
                    if result.requeued + result.deadLettered > 0 {
                        logger.warning("rescued jobs whose lease expired", [("requeued", result.requeued), ("dead_lettered", result.deadLettered)])
                        metrics.recordRescue(requeued: result.requeued, deadLettered: result.deadLettered)
                    }
                }
            }
            if now - lastPrune >= .seconds(60) {
                let retentionMs = Int64(configuration.retention.milliseconds)
                _ = session.run { connection in
                    _ = try JobsTable.pruneCompleted(olderThanMilliseconds: retentionMs, on: connection)
                    try WorkersTable.pruneDead(on: connection)
                    try AttemptStatsTable.prune(on: connection)
                    if let keep = self.configuration.deadLetterRetention {
                        _ = try DeadLettersTable.purge(olderThanMilliseconds: Int64(keep.milliseconds), on: connection)
                    }
                }
                lastPrune = now
            }
            if now - lastStatsFlush >= .seconds(5) {
                flushAttemptStats(session: session)
                lastStatsFlush = now
            }
            if now - lastSettingsRead >= .seconds(10) {
                if case .success(let rows) = session.run({ try QueueSettingsTable.all(on: $0) }) {
                    lock.withLock { queuePolicies.update(rows) }
                    lastSettingsRead = now
                }
            }
            reportEvidence(session: session)
            runDueProbes(session: session)
            maintenanceSignal.wait(timeout: .milliseconds(250))
        }
        reportEvidence(session: session)
        gracefulShutdown(session: session)
    }

    /// Adds this worker's attempt counts to the fleet-wide table.
    func flushAttemptStats(session: DatabaseSession) {
        let counts = lock.withLock { () -> [AttemptStatsTable.Key: AttemptStatsTable.Counts] in
            defer { attemptCounts.removeAll(keepingCapacity: true) }
            return attemptCounts
        }
        guard !counts.isEmpty else { return }
        if case .failure = session.run({ try AttemptStatsTable.add(counts, on: $0) }) {
            // Keep them for the next try rather than lose them.
            lock.withLock {
                for (key, value) in counts {
                    var merged = attemptCounts[key] ?? .init()
                    merged.attempts += value.attempts
                    merged.retries += value.retries
                    merged.succeededAfterRetry += value.succeededAfterRetry
                    merged.delayMillisecondsSum += value.delayMillisecondsSum
                    for index in merged.delayBuckets.indices { merged.delayBuckets[index] += value.delayBuckets[index] }
                    attemptCounts[key] = merged
                }
            }
        }
    }

    /// Runs on the maintenance thread once stopping is set.
    func gracefulShutdown(session: DatabaseSession) {
        _ = session.run { try WorkersTable.heartbeat(id: self.id, stopping: true, on: $0) }
        let deadline = ContinuousClock.now + configuration.shutdownGrace
        var lastRenewal = ContinuousClock.now
        // In-flight jobs finish within the grace; keep their leases alive meanwhile.
        while inFlightCount > 0 && ContinuousClock.now < deadline {
            if ContinuousClock.now - lastRenewal >= configuration.heartbeatInterval {
                let held = lock.withLock { Array(inFlight.keys) }
                _ = session.run { try JobsTable.extendLeases(ids: held, worker: self.id,
                                                              leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: $0) }
                lastRenewal = ContinuousClock.now
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let remaining = lock.withLock { () -> [Task<Void, Never>] in
            var tasks: [Task<Void, Never>] = []
            for (id, job) in inFlight {
                inFlight[id]?.abortedByShutdown = true
                if let task = job.task { tasks.append(task) }
            }
            return tasks
        }
        if !remaining.isEmpty {
            logger.warning("grace period over; aborting in-flight jobs", [("jobs", remaining.count)])
            remaining.forEach { $0.cancel() }
            let abortDeadline = ContinuousClock.now + .seconds(5)
            while inFlightCount > 0 && ContinuousClock.now < abortDeadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        flushAttemptStats(session: session)
        // Let the acknowledging thread write everything, then leave.
        lock.withLock { drained = true }
        ackSignal.signal()
        let flushDeadline = ContinuousClock.now + .seconds(10)
        while acknowledgements.count > 0 && ContinuousClock.now < flushDeadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        if acknowledgements.count > 0 {
            logger.error("could not write all results before exiting; their leases will expire and the jobs be rescued",
                         [("pending", acknowledgements.count)])
            lock.withLock { ackGiveUp = true }
        }
        ackSignal.signal()
        _ = session.run { try WorkersTable.deregister(id: self.id, on: $0) }
        claimSignal.signal()
    }

    /// Aborts running jobs an operator cancelled; each is recorded as `cancelled`.
    func cancelRunning(_ ids: [Int64]) {
        let tasks = lock.withLock { () -> [Task<Void, Never>] in
            ids.compactMap { id in
                guard inFlight[id] != nil, inFlight[id]?.cancelledByOperator == false else { return nil }
                inFlight[id]?.cancelledByOperator = true
                return inFlight[id]?.task
            }
        }
        for task in tasks { task.cancel() }
    }
}
