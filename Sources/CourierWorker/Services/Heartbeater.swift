import CourierCore
import CourierStore
import Foundation

/// What the heartbeater needs from the worker.
protocol LeaseHolder: AnyObject, Sendable {
    /// The leases this worker holds: its jobs', and those of results not yet written.
    var heldLeases: [WorkerStateMachine.Lease] { get }
    /// The half-open probes this worker is running: their leases are renewed with the jobs'.
    var heldProbes: [(destination: String, generation: Int64)] { get }
    /// True once a graceful shutdown has begun.
    var isStopping: Bool { get }
    /// The database says an operator cancelled these jobs.
    func cancelRequested(_ ids: [Int64])
    /// A renewal sent at `sentAt` succeeded and renewed these leases (the lease fence's proof).
    func leasesRenewed(_ renewed: [WorkerStateMachine.Lease], sentAt: ContinuousClock.Instant)
}

/// Renews this worker's leases and registration on a connection of its own, so no
/// other statement (breaker reports, pruning, acknowledgements) can delay a renewal.
/// Between renewals it asks once a second whether an operator cancelled a running
/// job, and at once when the listener heard a cancellation. It is the last service
/// to stop: leases stay renewed until every result is written.
final class Heartbeater: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        var registration: WorkersTable.Registration
        var leaseMilliseconds: Int
        var probeLeaseMilliseconds: Int64
        /// How often leases and the registration are renewed: a third of the lease, between 200 ms and 10 s.
        var interval: Duration
        /// How often running jobs are checked for cancellation between renewals. Default 1 s.
        var cancelCheckInterval: Duration = .seconds(1)

        init(leases: LeaseSettings, registration: WorkersTable.Registration) {
            self.registration = registration
            leaseMilliseconds = leases.leaseMilliseconds
            probeLeaseMilliseconds = leases.probeLeaseMilliseconds
            interval = leases.heartbeatInterval
        }
    }

    let name = "courier-heartbeat"
    let configuration: Configuration
    private let session: StoreSession
    private unowned let holder: any LeaseHolder
    private var registered = false
    private var lastHeartbeat: ContinuousClock.Instant?
    private var lastCancelCheck: ContinuousClock.Instant?
    /// The stopping flag the last heartbeat carried: a change is reported at once.
    private var reportedStopping = false
    private let cancelCheckWanted = Locked(false)

    private let clock: @Sendable () -> ContinuousClock.Instant
    /// Where each renewal round's round trip is recorded (`courier_lease_renewal_seconds`).
    private let metrics: WorkerMetrics?

    init(configuration: Configuration, session: StoreSession, holder: any LeaseHolder, metrics: WorkerMetrics? = nil,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.configuration = configuration
        self.session = session
        self.holder = holder
        self.metrics = metrics
        self.clock = clock
    }

    /// A cancellation was announced: look at the database at the next round.
    func requestCancelCheck() {
        cancelCheckWanted.withLock { $0 = true }
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        let id = configuration.registration.id
        if !registered, case .success = session.run({ try $0.workerRegister(self.configuration.registration) }) {
            registered = true
        }
        let held = holder.heldLeases
        let probes = holder.heldProbes
        let stopping = holder.isStopping
        let wanted = cancelCheckWanted.withLock { wanted -> Bool in defer { wanted = false }; return wanted }
        if lastHeartbeat.map({ now - $0 >= configuration.interval }) ?? true || stopping != reportedStopping {
            // The send instant: the database's now() that sets the leases comes after it.
            let sentAt = clock()
            let result = session.run { store -> JobsTable.LeaseRenewal in
                if !(try store.workerHeartbeat(id: id, stopping: stopping)) {
                    try store.workerRegister(self.configuration.registration)
                }
                // A probe whose request outlives its lease would be taken over by another worker
                // while this one still waits for the answer: renew it like the job's lease.
                for probe in probes {
                    _ = try store.breakerRenewProbe(destination: probe.destination, generation: probe.generation, worker: id,
                                                    probeLeaseMilliseconds: self.configuration.probeLeaseMilliseconds)
                }
                return try store.jobsRenewLeases(held.map { ($0.id, $0.token) }, worker: id,
                                                 leaseMilliseconds: self.configuration.leaseMilliseconds)
            }
            if case .success(let renewal) = result {
                metrics?.recordLeaseRenewal(clock() - sentAt)
                lastHeartbeat = now
                reportedStopping = stopping
                holder.leasesRenewed(renewal.renewed.map { WorkerStateMachine.Lease(id: $0.id, token: $0.lease) }, sentAt: sentAt)
                holder.cancelRequested(renewal.cancelled)
            }
        } else if !held.isEmpty && (wanted || lastCancelCheck.map { now - $0 >= configuration.cancelCheckInterval } ?? true) {
            lastCancelCheck = now
            if case .success(let cancelled) = session.run({ try $0.jobsCancelRequested(worker: id) }) {
                holder.cancelRequested(cancelled)
            }
        }
        let sinceBeat = lastHeartbeat.map { now - $0 } ?? .zero
        return min(max(.milliseconds(1), configuration.interval - sinceBeat), configuration.cancelCheckInterval)
    }

    /// The worker is gone: take it off the list of live workers.
    func finish() {
        _ = session.run { try $0.workerDeregister(id: self.configuration.registration.id) }
        session.close()
    }
}
