import CourierStore

/// The worker's jobs and shutdown phase as a value: every event returns what the
/// runtime must do, and nothing else changes it. The runtime keeps one instance
/// under a lock; tests drive it one event at a time.
///
/// Jobs are keyed by id and lease token: after a lost lease the same job can come back
/// to this worker under a later lease while the old one is still unwinding, and the two
/// must not overwrite each other.
public struct WorkerStateMachine: Sendable {
    /// Where a graceful shutdown stands.
    public enum Phase: Sendable, Equatable {
        /// Claiming and running.
        case running
        /// No new claims; jobs already started may finish until `deadline`.
        case draining(deadline: ContinuousClock.Instant)
        /// The grace is over: what still runs was told to abort and has until `deadline` to unwind.
        case aborting(deadline: ContinuousClock.Instant)
        /// No job is left (or the abort deadline passed): results and statistics are being written.
        case flushing
        case stopped
    }

    /// One lease this worker holds: the job and the lease's fence token (``ClaimedJob/lease``).
    public struct Lease: Sendable, Hashable {
        public var id: Int64
        public var token: Int64
        public init(id: Int64, token: Int64) {
            self.id = id
            self.token = token
        }
    }

    /// A job this worker holds, and what happened to it while it ran.
    public struct Entry: Sendable {
        public var job: ClaimedJob
        public var started = false
        public var cancelledByOperator = false
        public var abortedByShutdown = false
        /// Set when the job is its destination's half-open probe.
        public var probeGeneration: Int64?
        /// When its lease was last proven (the claim's or a renewal's send instant); nil
        /// leaves it outside the fence (tests that do not exercise it).
        public var provenAt: ContinuousClock.Instant?
        /// Aborted (or never started) because its lease could no longer be proven.
        public var abortedByFence = false
    }

    /// What a claim that returned jobs leads to.
    public enum ClaimAction: Sendable, Equatable {
        /// Run these jobs.
        case start([Lease])
        /// Shutdown began while the claim ran: give them back unstarted.
        case handBack([Lease])
    }

    /// What a job about to run should do.
    public enum StartAction: Sendable, Equatable {
        case run
        /// Shutdown began before it started: back to the queue without using an attempt
        /// (the caller queues the hand-back, then reports `finished`).
        case handBack
        /// The worker does not hold this lease (it already finished).
        case ignore
    }

    /// What the runtime does after a phase change or a tick.
    public enum Action: Sendable, Equatable {
        /// Stop claiming and probing; tell the fleet this worker is stopping.
        case stopClaiming
        /// Abort these running jobs (their results are recorded as aborted at shutdown).
        case abort([Lease])
        /// Abort these running jobs at an operator's request.
        case cancel([Lease])
        /// Abort these jobs: their leases can no longer be proven (the database is out of
        /// reach), and another worker may rescue them soon (see ``LeaseFence``).
        case fence([Lease])
        /// Write what is left and stop the remaining services.
        case flush
    }

    public let concurrency: Int
    public private(set) var phase: Phase = .running
    public private(set) var jobs: [Lease: Entry] = [:]
    /// How many of `jobs` each destination has, kept beside them so the claimer's question
    /// "which destination holds the most slots" (asked every claim round) walks the
    /// destinations, not a copy of every held job.
    public private(set) var heldPerDestination: [String: Int] = [:]
    /// How long aborted jobs get to unwind before the worker flushes without them.
    public let abortGrace: Duration

    /// When leases are trusted, and the last renewal.
    public private(set) var fence: LeaseFence

    public init(concurrency: Int, abortGrace: Duration = .seconds(5), fence: LeaseFence = LeaseFence(lease: .seconds(30))) {
        self.concurrency = concurrency
        self.abortGrace = abortGrace
        self.fence = fence
    }

    public var isRunning: Bool { phase == .running }
    public var freeSlots: Int { isRunning ? max(0, concurrency - jobs.count) : 0 }
    /// Ids of the jobs whose leases must be renewed.
    public var heldIDs: [Int64] { jobs.keys.map(\.id) }
    /// The leases to renew.
    public var heldLeases: [Lease] { Array(jobs.keys) }

    /// Slots a claim may fill at `now`: none while the fence is closed (the heartbeater
    /// has not proven the leases lately), else ``freeSlots``.
    public func claimableSlots(now: ContinuousClock.Instant) -> Int {
        fence.mayClaim(now: now) ? freeSlots : 0
    }

    /// The earliest instant at which a held lease stops being trusted.
    public var nextFenceDeadline: ContinuousClock.Instant? {
        jobs.values.compactMap { entry in entry.abortedByFence ? nil : entry.provenAt.map(fence.deadline(provenAt:)) }.min()
    }
    /// The half-open probes among them, whose probe leases must be renewed too.
    public var heldProbes: [(destination: String, generation: Int64)] {
        jobs.values.compactMap { entry in entry.probeGeneration.map { (entry.job.destination, $0) } }
    }

    // MARK: Events

    /// A claim (or a won probe) returned `claimed`.
    /// - Parameters:
    ///   - provenAt: when the claim was sent (its leases are proven from then); with `now`,
    ///     a claim whose answer came too late to be trusted is handed back unstarted.
    public mutating func claimed(_ claimed: [ClaimedJob], probeGeneration: Int64? = nil,
                                 provenAt: ContinuousClock.Instant? = nil, now: ContinuousClock.Instant? = nil) -> ClaimAction {
        let leases = claimed.map { Lease(id: $0.id, token: $0.lease) }
        guard isRunning else { return .handBack(leases) }
        if let provenAt, let now, fence.isUntrusted(provenAt: provenAt, now: now) { return .handBack(leases) }
        for (lease, job) in zip(leases, claimed) {
            if let replaced = jobs.updateValue(Entry(job: job, probeGeneration: probeGeneration, provenAt: provenAt), forKey: lease) {
                released(replaced.job.destination)
            }
            heldPerDestination[job.destination, default: 0] += 1
        }
        return .start(leases)
    }

    /// A job's task is about to run it.
    public mutating func started(_ lease: Lease) -> StartAction { starting(lease).action }

    /// What a job's task that starts now does, with the job it runs and the entry's marks
    /// as they stand (nil when the lease is not held): one look-up, and no copy of the
    /// whole entry.
    public mutating func starting(_ lease: Lease) -> Start {
        guard let index = jobs.index(forKey: lease) else { return Start(action: .ignore, job: nil, marks: nil) }
        let marks = Marks(jobs.values[index])
        let job = jobs.values[index].job
        guard isRunning, !marks.abortedByFence else { return Start(action: .handBack, job: job, marks: marks) }
        jobs.values[index].started = true
        return Start(action: .run, job: job, marks: marks)
    }

    /// See ``starting(_:)``.
    public struct Start: Sendable {
        public var action: StartAction
        public var job: ClaimedJob?
        public var marks: Marks?
    }

    /// What happened to a held job while it ran, read without copying its job.
    public func marks(of lease: Lease) -> Marks? {
        guard let index = jobs.index(forKey: lease) else { return nil }
        return Marks(jobs.values[index])
    }

    /// An entry's marks: whether it was cancelled or aborted, and its probe.
    public struct Marks: Sendable, Equatable {
        public var cancelledByOperator: Bool
        public var abortedByShutdown: Bool
        public var abortedByFence: Bool
        public var probeGeneration: Int64?
    }

    /// A job's task finished (its result is queued). Returns the entry as it ended,
    /// and `.flush` when that was the last job a shutdown waited for.
    public mutating func finished(_ lease: Lease) -> (entry: Entry?, actions: [Action]) {
        let entry = jobs.removeValue(forKey: lease)
        if let entry { released(entry.job.destination) }
        return (entry, drainedActions())
    }

    private mutating func released(_ destination: String) {
        let left = (heldPerDestination[destination] ?? 0) - 1
        heldPerDestination[destination] = left > 0 ? left : nil
    }

    /// An operator asked to cancel these jobs (read from the database, never from a notification's payload).
    public mutating func cancelRequested(ids: [Int64]) -> [Action] {
        let wanted = Set(ids)
        var leases: [Lease] = []
        for (lease, entry) in jobs where wanted.contains(lease.id) && !entry.cancelledByOperator {
            jobs[lease]?.cancelledByOperator = true
            leases.append(lease)
        }
        return leases.isEmpty ? [] : [.cancel(leases.sorted { $0.id < $1.id })]
    }

    /// The heartbeater's renewal sent at `sentAt` succeeded and renewed `renewed` (held
    /// leases it did not renew keep their older proof). Returns true when claiming was
    /// fenced off until now and may resume.
    public mutating func leasesRenewed(_ renewed: [Lease], sentAt: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Bool {
        let wasFenced = !fence.mayClaim(now: now)
        fence.renewed(sentAt: sentAt)
        for lease in renewed {
            guard let proven = jobs[lease]?.provenAt else { continue }
            jobs[lease]?.provenAt = max(proven, sentAt)
        }
        return wasFenced && fence.mayClaim(now: now)
    }

    /// Time passed: jobs whose leases are no longer trusted are aborted (once each).
    public mutating func fenceCheck(now: ContinuousClock.Instant) -> [Action] {
        var leases: [Lease] = []
        for (lease, entry) in jobs where !entry.abortedByFence {
            guard let provenAt = entry.provenAt, fence.isUntrusted(provenAt: provenAt, now: now) else { continue }
            jobs[lease]?.abortedByFence = true
            leases.append(lease)
        }
        return leases.isEmpty ? [] : [.fence(leases.sorted { $0.id < $1.id })]
    }

    /// SIGTERM, SIGINT or `shutdown()`.
    public mutating func shutdownRequested(now: ContinuousClock.Instant, grace: Duration) -> [Action] {
        guard isRunning else { return [] }
        // Jobs claimed but not yet started go back at once: only started jobs get the grace.
        phase = .draining(deadline: now + grace)
        return [.stopClaiming] + drainedActions()
    }

    /// Time passed; moves the shutdown on when its deadlines pass.
    public mutating func tick(now: ContinuousClock.Instant) -> [Action] {
        switch phase {
        case .draining(let deadline) where now >= deadline:
            phase = .aborting(deadline: now + abortGrace)
            var leases: [Lease] = []
            for lease in jobs.keys {
                jobs[lease]?.abortedByShutdown = true
                leases.append(lease)
            }
            return [.abort(leases.sorted { $0.id < $1.id })] + drainedActions()
        case .aborting(let deadline) where now >= deadline:
            phase = .flushing
            return [.flush]
        default:
            return []
        }
    }

    /// Everything is written and every service stopped.
    public mutating func stopped() {
        phase = .stopped
    }

    /// `.flush` once a draining or aborting worker holds no job.
    private mutating func drainedActions() -> [Action] {
        switch phase {
        case .draining, .aborting:
            guard jobs.isEmpty else { return [] }
            phase = .flushing
            return [.flush]
        default:
            return []
        }
    }

    /// When the next tick is due to move the shutdown on, if one is waiting on a deadline.
    public var nextDeadline: ContinuousClock.Instant? {
        switch phase {
        case .draining(let deadline), .aborting(let deadline): deadline
        default: nil
        }
    }
}

extension WorkerStateMachine.Marks {
    /// The marks of `entry` (in an extension, so the memberwise initializer stays too).
    public init(_ entry: borrowing WorkerStateMachine.Entry) {
        self.init(cancelledByOperator: entry.cancelledByOperator, abortedByShutdown: entry.abortedByShutdown,
                  abortedByFence: entry.abortedByFence, probeGeneration: entry.probeGeneration)
    }
}
