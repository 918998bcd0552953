import CourierCore
import Foundation
import Postgres

/// Everything a worker asks of the database, as noun-verb operations on typed values.
/// The worker's services talk to this protocol only; `PostgresWorkerStore` runs each
/// operation as the statements in the table files (JobsTable, BreakersTable, ...).
/// Errors thrown are `StoreError`s (see `StoreSession.run`).
public protocol WorkerStore {
    // Jobs: leasing, renewal, results.
    /// The plain claim started after `position` (nil: from the start); says where it stopped.
    func jobsClaim(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int, after position: ClaimPosition?) throws -> ClaimBatch
    /// Claims jobs of destinations with a traffic policy, within their limits (see `JobsTable.claimGated`).
    func jobsClaimGated(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int) throws -> [ClaimedJob]
    /// Claims a few runnable jobs per destination from a cursor, skipping some (see `JobsTable.claimSpread`).
    func jobsClaimSpread(queue: String, limit: Int, perDestination: Int, after: String?, excluding: [String], visit: Int,
                         worker: UUID, leaseMilliseconds: Int) throws -> JobsTable.SpreadRound
    /// Claims by weighted round robin over a queue's fairness keys, from a cursor (see `JobsTable.claimFair`).
    func jobsClaimFair(queue: String, limit: Int, cursor: JobsTable.FairCursor, quantum: Int, visit: Int,
                       bounds: [String: ClaimPosition], worker: UUID, leaseMilliseconds: Int) throws -> JobsTable.FairRound
    /// Which of these queues have jobs with a fairness key waiting.
    func queuesWithFairnessKeys(_ queues: [String]) throws -> Set<String>
    /// One bounded pass moving jobs between the runnable, gated and held states; -1 when another worker's ran.
    func trafficMaintain(batch: Int) throws -> Int
    /// The gated destinations' policies and fleet-wide counters.
    func destinationsTraffic() throws -> [DestinationsTable.Traffic]
    func jobClaimProbe(destination: String, generation: Int64, queues: [String], worker: UUID,
                       leaseMilliseconds: Int) throws -> ClaimedJob?
    /// Renews exactly these (id, lease token) leases, locked in id order; says which it renewed.
    func jobsRenewLeases(_ leases: [(id: Int64, lease: Int64)], worker: UUID, leaseMilliseconds: Int) throws -> JobsTable.LeaseRenewal
    func jobsCancelRequested(worker: UUID) throws -> [Int64]
    /// The leases the database says this worker holds, but for its own probes' jobs (``JobsTable/leasesHeld(worker:on:)``).
    func jobsLeasesHeld(worker: UUID) throws -> [(id: Int64, lease: Int64)]
    func jobsComplete(_ successes: [JobsTable.Success], worker: UUID, archive: Bool) throws -> [Int64]
    func jobsRetry(_ retries: [JobsTable.Retry], worker: UUID) throws -> [Int64]
    func jobsDeadLetter(_ letters: [JobsTable.DeadLetter], worker: UUID) throws -> [Int64]
    func jobsHandBack(ids: [Int64], leases: [Int64], worker: UUID) throws -> [Int64]
    /// Hands jobs this worker may not run back without using their attempt, due no sooner
    /// than now + `notBeforeMilliseconds`, each refusal counted (``JobsTable/refuse(_:worker:notBeforeMilliseconds:on:)``).
    func jobsRefuse(_ refusals: [JobsTable.Refusal], worker: UUID, notBeforeMilliseconds: Int64) throws -> [Int64]
    func jobsRescueExpired() throws -> JobsTable.RescueResult
    /// One bounded batch (oldest first, `SKIP LOCKED`) of each prune; a full batch means more is due.
    func completedJobsPrune(olderThanMilliseconds: Int64, batch: Int) throws -> Int
    /// Truncates drained ring slots of courier.jobs and moves what waits in the next one (`JobsTable.reclaim`).
    func jobsReclaim(moveLimit: Int) throws -> JobsTable.ReclaimResult
    func breakerEventsPrune(olderThanMilliseconds: Int64, batch: Int) throws -> Int
    func deadLettersPurge(olderThanMilliseconds: Int64, batch: Int) throws -> Int

    // Workers.
    func workerRegister(_ registration: WorkersTable.Registration) throws
    /// Returns false when the row is gone (pruned as dead): register again.
    func workerHeartbeat(id: UUID, stopping: Bool) throws -> Bool
    func workerDeregister(id: UUID) throws
    func workersPruneDead() throws -> Int

    // Breakers.
    func breakerPause(destination: String, milliseconds: Int64) throws
    func breakerReport(destination: String, successes: Int, failures: Int, trailingFailures: Int, worker: String,
                       policy: BreakersTable.ReportPolicy) throws -> String
    func breakersDueForProbe(queues: [String]) throws -> [String]
    /// Destinations whose jobs are held back now (breaker, Retry-After, pause), at most `limit`.
    func destinationsHeldBack(limit: Int) throws -> [String]
    func breakerTryProbe(destination: String, worker: UUID, probeLeaseMilliseconds: Int64) throws -> Int64?
    func breakerProbeResult(destination: String, generation: Int64, succeeded: Bool, worker: String,
                            policy: BreakersTable.ReportPolicy, jitter: Double) throws -> String?
    func breakerAbandonProbe(destination: String, generation: Int64, worker: String) throws -> Bool
    /// Renews a probe lease this worker holds; false when the probe is no longer its own.
    func breakerRenewProbe(destination: String, generation: Int64, worker: UUID, probeLeaseMilliseconds: Int64) throws -> Bool

    // Statistics, settings, housekeeping.
    func attemptStatsAdd(_ counts: [AttemptStatsTable.Key: AttemptStatsTable.Counts]) throws
    func attemptStatsPrune() throws -> Int
    func queueSettingsAll() throws -> [QueueSettingsTable.Settings]
    /// The destinations that opted in to trace propagation (``DestinationsTable/propagatingTrace(on:)``).
    func destinationsPropagatingTrace() throws -> [String]
    func migrationsApplied() throws -> [Int]

    // Fleet-wide figures for /metrics (read-only).
    func statsQueueDepths() throws -> [StatsQueries.QueueDepth]
    func statsDeadLetterCounts() throws -> [String: Int]
    func statsBreakerStates() throws -> [String: Int]
    func statsOpenBreakers(limit: Int) throws -> [StatsQueries.OpenBreaker]
    func statsBreakerTransitionCounts() throws -> [StatsQueries.BreakerTransitionCount]
    func statsLiveWorkerCount() throws -> Int
    /// The worker that exports the fleet-wide metrics: the live one with the smallest id.
    func statsFleetReporter() throws -> UUID?

    // Schedules (the scheduler service)
    func schedulesRunNextDue(now: Date?, lateTolerance: Duration) throws -> SchedulesTable.Pass?
    func schedulesEarliestNextRun(now: Date?) throws -> (next: Date?, now: Date)
}

/// `WorkerStore` on one PostgreSQL connection.
public struct PostgresWorkerStore: WorkerStore {
    let connection: PostgresConnection

    init(connection: PostgresConnection) { self.connection = connection }

    public func schedulesRunNextDue(now: Date?, lateTolerance: Duration) throws -> SchedulesTable.Pass? {
        try SchedulesTable.runNextDue(now: now, lateTolerance: lateTolerance, on: connection)
    }
    public func schedulesEarliestNextRun(now: Date?) throws -> (next: Date?, now: Date) {
        try SchedulesTable.earliestNextRun(now: now, on: connection)
    }

    public func jobsClaim(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int,
                          after position: ClaimPosition?) throws -> ClaimBatch {
        try JobsTable.claim(queue: queue, limit: limit, worker: worker, leaseMilliseconds: leaseMilliseconds, after: position,
                            on: connection)
    }
    public func jobsClaimGated(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int) throws -> [ClaimedJob] {
        try JobsTable.claimGated(queue: queue, limit: limit, worker: worker, leaseMilliseconds: leaseMilliseconds, on: connection)
    }
    public func jobsClaimSpread(queue: String, limit: Int, perDestination: Int, after: String?, excluding: [String], visit: Int,
                                worker: UUID, leaseMilliseconds: Int) throws -> JobsTable.SpreadRound {
        try JobsTable.claimSpread(queue: queue, limit: limit, perDestination: perDestination, after: after, excluding: excluding,
                                  visit: visit, worker: worker, leaseMilliseconds: leaseMilliseconds, on: connection)
    }
    public func jobsClaimFair(queue: String, limit: Int, cursor: JobsTable.FairCursor, quantum: Int, visit: Int,
                              bounds: [String: ClaimPosition], worker: UUID, leaseMilliseconds: Int) throws -> JobsTable.FairRound {
        try JobsTable.claimFair(queue: queue, limit: limit, cursor: cursor, quantum: quantum, visit: visit, bounds: bounds,
                                worker: worker, leaseMilliseconds: leaseMilliseconds, on: connection)
    }
    public func queuesWithFairnessKeys(_ queues: [String]) throws -> Set<String> {
        try JobsTable.queuesWithFairnessKeys(queues, on: connection)
    }
    public func trafficMaintain(batch: Int) throws -> Int { try JobsTable.trafficMaintain(batch: batch, on: connection) }
    public func destinationsTraffic() throws -> [DestinationsTable.Traffic] { try DestinationsTable.traffic(on: connection) }
    public func jobClaimProbe(destination: String, generation: Int64, queues: [String], worker: UUID,
                              leaseMilliseconds: Int) throws -> ClaimedJob? {
        try JobsTable.claimProbe(destination: destination, generation: generation, queues: queues, worker: worker,
                                 leaseMilliseconds: leaseMilliseconds, on: connection)
    }
    public func jobsRenewLeases(_ leases: [(id: Int64, lease: Int64)], worker: UUID,
                                leaseMilliseconds: Int) throws -> JobsTable.LeaseRenewal {
        try JobsTable.renewLeases(leases, worker: worker, leaseMilliseconds: leaseMilliseconds, on: connection)
    }
    public func jobsLeasesHeld(worker: UUID) throws -> [(id: Int64, lease: Int64)] {
        try JobsTable.leasesHeld(worker: worker, on: connection)
    }
    public func jobsCancelRequested(worker: UUID) throws -> [Int64] {
        try JobsTable.cancelRequested(worker: worker, on: connection)
    }
    public func jobsComplete(_ successes: [JobsTable.Success], worker: UUID, archive: Bool) throws -> [Int64] {
        try JobsTable.complete(successes, worker: worker, archive: archive, on: connection)
    }
    public func jobsRetry(_ retries: [JobsTable.Retry], worker: UUID) throws -> [Int64] {
        try JobsTable.retry(retries, worker: worker, on: connection)
    }
    public func jobsDeadLetter(_ letters: [JobsTable.DeadLetter], worker: UUID) throws -> [Int64] {
        try JobsTable.deadLetter(letters, worker: worker, on: connection)
    }
    public func jobsHandBack(ids: [Int64], leases: [Int64], worker: UUID) throws -> [Int64] {
        try JobsTable.handBack(ids: ids, leases: leases, worker: worker, on: connection)
    }
    public func jobsRefuse(_ refusals: [JobsTable.Refusal], worker: UUID, notBeforeMilliseconds: Int64) throws -> [Int64] {
        try JobsTable.refuse(refusals, worker: worker, notBeforeMilliseconds: notBeforeMilliseconds, on: connection)
    }
    public func jobsRescueExpired() throws -> JobsTable.RescueResult { try JobsTable.rescueExpired(on: connection) }
    public func completedJobsPrune(olderThanMilliseconds: Int64, batch: Int) throws -> Int {
        try JobsTable.pruneCompleted(olderThanMilliseconds: olderThanMilliseconds, batch: batch, on: connection)
    }
    public func jobsReclaim(moveLimit: Int) throws -> JobsTable.ReclaimResult {
        try JobsTable.reclaim(moveLimit: moveLimit, on: connection)
    }
    public func breakerEventsPrune(olderThanMilliseconds: Int64, batch: Int) throws -> Int {
        try BreakersTable.pruneEvents(olderThanMilliseconds: olderThanMilliseconds, batch: batch, on: connection)
    }
    public func deadLettersPurge(olderThanMilliseconds: Int64, batch: Int) throws -> Int {
        try DeadLettersTable.purgeBatch(olderThanMilliseconds: olderThanMilliseconds, batch: batch, on: connection)
    }

    public func workerRegister(_ registration: WorkersTable.Registration) throws {
        try WorkersTable.register(registration, on: connection)
    }
    public func workerHeartbeat(id: UUID, stopping: Bool) throws -> Bool {
        try WorkersTable.heartbeat(id: id, stopping: stopping, on: connection)
    }
    public func workerDeregister(id: UUID) throws { try WorkersTable.deregister(id: id, on: connection) }
    public func workersPruneDead() throws -> Int { try WorkersTable.pruneDead(on: connection) }

    public func breakerPause(destination: String, milliseconds: Int64) throws {
        try BreakersTable.pause(destination: destination, milliseconds: milliseconds, on: connection)
    }
    public func breakerReport(destination: String, successes: Int, failures: Int, trailingFailures: Int, worker: String,
                              policy: BreakersTable.ReportPolicy) throws -> String {
        try BreakersTable.report(destination: destination, successes: successes, failures: failures,
                                 trailingFailures: trailingFailures, worker: worker, policy: policy, on: connection)
    }
    public func destinationsHeldBack(limit: Int) throws -> [String] { try BreakersTable.heldBack(limit: limit, on: connection) }
    public func breakersDueForProbe(queues: [String]) throws -> [String] {
        try BreakersTable.dueForProbe(queues: queues, on: connection)
    }
    public func breakerTryProbe(destination: String, worker: UUID, probeLeaseMilliseconds: Int64) throws -> Int64? {
        try BreakersTable.tryProbe(destination: destination, worker: worker, probeLeaseMilliseconds: probeLeaseMilliseconds,
                                   on: connection)
    }
    public func breakerProbeResult(destination: String, generation: Int64, succeeded: Bool, worker: String,
                                   policy: BreakersTable.ReportPolicy, jitter: Double) throws -> String? {
        try BreakersTable.probeResult(destination: destination, generation: generation, succeeded: succeeded,
                                      worker: worker, policy: policy, jitter: jitter, on: connection)
    }
    public func breakerAbandonProbe(destination: String, generation: Int64, worker: String) throws -> Bool {
        try BreakersTable.abandonProbe(destination: destination, generation: generation, worker: worker, on: connection)
    }

    public func breakerRenewProbe(destination: String, generation: Int64, worker: UUID,
                                  probeLeaseMilliseconds: Int64) throws -> Bool {
        try BreakersTable.renewProbe(destination: destination, generation: generation, worker: worker,
                                     probeLeaseMilliseconds: probeLeaseMilliseconds, on: connection)
    }

    public func attemptStatsAdd(_ counts: [AttemptStatsTable.Key: AttemptStatsTable.Counts]) throws {
        try AttemptStatsTable.add(counts, on: connection)
    }
    public func attemptStatsPrune() throws -> Int { try AttemptStatsTable.prune(on: connection) }
    public func queueSettingsAll() throws -> [QueueSettingsTable.Settings] { try QueueSettingsTable.all(on: connection) }
    public func destinationsPropagatingTrace() throws -> [String] { try DestinationsTable.propagatingTrace(on: connection) }
    public func migrationsApplied() throws -> [Int] { try Migrator.appliedVersions(connection) }

    public func statsQueueDepths() throws -> [StatsQueries.QueueDepth] { try StatsQueries.queueDepths(on: connection) }
    public func statsDeadLetterCounts() throws -> [String: Int] { try StatsQueries.deadLetterCounts(on: connection) }
    public func statsBreakerStates() throws -> [String: Int] { try StatsQueries.breakerStates(on: connection) }
    public func statsOpenBreakers(limit: Int) throws -> [StatsQueries.OpenBreaker] {
        try StatsQueries.openBreakers(limit: limit, on: connection)
    }
    public func statsBreakerTransitionCounts() throws -> [StatsQueries.BreakerTransitionCount] {
        try StatsQueries.breakerTransitionCounts(on: connection)
    }
    public func statsLiveWorkerCount() throws -> Int { try StatsQueries.liveWorkerCount(on: connection) }
    public func statsFleetReporter() throws -> UUID? { try StatsQueries.fleetReporter(on: connection) }
}
