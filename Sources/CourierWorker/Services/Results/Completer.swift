import CourierCore
import CourierStore
import Foundation

/// Writes decided outcomes in batches, one statement per kind, each fenced by the
/// job's lease. A batch the database refuses (not a lost connection) is tried a few
/// times, then written one result at a time; a result that still fails is dropped
/// and logged, so one bad row cannot stall every other result. Its lease then
/// expires and the rescuer takes the job back: nothing is lost.
///
/// Until a result is written (or dropped), its lease is listed in ``unwrittenLeases``, and
/// the heartbeater keeps renewing it: a stalled or slow acknowledgement connection does not
/// let another worker rescue a job whose result is waiting here.
final class Completer: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        var worker: UUID
        /// Most results written in one round. Default 500.
        var batch: Int
        /// How long a result may wait for a batch to fill (``WorkerConfiguration/ackFlushInterval``, default 10 ms).
        var flushInterval: Duration
        /// Tries of a refused batch before it is split, and of a single refused result before it is dropped. Default 3.
        var triesBeforeSplit = 3
        /// How long the final flush at shutdown may keep trying. Default 10 s.
        var finalFlushTimeout: Duration = .seconds(10)
        /// Whether successes are archived in `completed_jobs` (`--retention` above 0).
        var archiveSuccesses: Bool
        var breakerPolicy: BreakersTable.ReportPolicy

        init(_ c: WorkerConfiguration, worker: UUID) {
            self.worker = worker
            batch = c.ackBatch
            flushInterval = c.ackFlushInterval
            archiveSuccesses = c.retention > .zero
            breakerPolicy = c.breakerPolicy.reportPolicy
        }
    }

    let name = "courier-ack"
    let configuration: Configuration
    private let session: StoreSession
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let jitter: @Sendable () -> Double
    private let clock: @Sendable () -> ContinuousClock.Instant
    /// Wakes this service's thread (set once the thread exists).
    var wake: @Sendable () -> Void = {}
    /// Called after a batch that put jobs back in the queue (retries, hand-backs).
    var requeued: @Sendable () -> Void = {}
    /// Called once a backlog that held the claimer back has been written.
    var backlogCleared: @Sendable () -> Void = {}

    private let lock = NSLock()
    private var pending: [Acknowledgement] = []
    /// The leases of results queued or being written, counted (one job can have a hand-back
    /// and its probe's verdict, or two leases' results, waiting at once).
    private var unwritten: [WorkerStateMachine.Lease: Int] = [:]
    private var oldestQueuedAt: ContinuousClock.Instant?
    private var refusals = 0

    init(configuration: Configuration, session: StoreSession, logger: Logger, metrics: WorkerMetrics,
         jitter: @escaping @Sendable () -> Double, clock: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.configuration = configuration
        self.session = session
        self.logger = logger
        self.metrics = metrics
        self.jitter = jitter
        self.clock = clock
    }

    /// Results not yet written.
    var count: Int { lock.withLock { pending.count } }

    /// The leases whose results are not written yet: they must stay renewed.
    var unwrittenLeases: [WorkerStateMachine.Lease] { lock.withLock { Array(unwritten.keys) } }

    /// So many results wait that claiming more would only grow the pile.
    var isBacklogged: Bool { count > backlogLimit }
    private var backlogLimit: Int { configuration.batch * 4 }

    /// Queues a result (from any task or thread).
    func append(_ item: Acknowledgement) {
        let (first, full) = lock.withLock { () -> (Bool, Bool) in
            pending.append(item)
            if let lease = item.lease { unwritten[lease, default: 0] += 1 }
            if oldestQueuedAt == nil { oldestQueuedAt = clock() }
            return (pending.count == 1, pending.count == configuration.batch)
        }
        // Wake only when a batch starts or fills: not once per result.
        if first || full { wake() }
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        let queued = count
        if let wait = waitBeforeWriting(now: now) { return wait }
        // A batch is due. After it, only what is due goes at once: results that arrived
        // while it was written wait their own interval instead of following as a small
        // statement of their own (which halved the results per statement).
        var wrote = writeOneBatch()
        while wrote && waitBeforeWriting(now: clock()) == nil { wrote = writeOneBatch() }
        let left = count
        // The claimer skipped claims while the pile was high: tell it there is room again.
        if queued > backlogLimit && left <= backlogLimit { backlogCleared() }
        guard wrote else { return left > 0 ? .milliseconds(1) : .seconds(1) }
        return waitBeforeWriting(now: clock()) ?? .zero
    }

    /// How long the pending results may still wait to fill a batch; nil when a batch is
    /// due (full, or its oldest result has waited the flush interval). One second when
    /// nothing is pending.
    private func waitBeforeWriting(now: ContinuousClock.Instant) -> Duration? {
        let (queued, oldest) = lock.withLock { (pending.count, oldestQueuedAt) }
        guard queued > 0, let oldest else { return .seconds(1) }
        if queued >= configuration.batch || now - oldest >= configuration.flushInterval { return nil }
        // Give a batch a moment to fill: one statement for many jobs.
        return configuration.flushInterval - (now - oldest)
    }

    /// Writes whatever is left, trying for at most the final-flush timeout.
    func finish() {
        let deadline = clock() + configuration.finalFlushTimeout
        while count > 0 && clock() < deadline {
            _ = writeOneBatch()
        }
        let left = count
        if left > 0 {
            logger.error("could not write all results before exiting; their leases will expire and the jobs be rescued",
                         [("pending", left)])
        }
        session.close()
    }

    /// Writes one batch; returns whether more may be written at once.
    private func writeOneBatch() -> Bool {
        let batch = lock.withLock { () -> [Acknowledgement] in
            let taken = Array(pending.prefix(configuration.batch))
            pending.removeFirst(taken.count)
            oldestQueuedAt = pending.isEmpty ? nil : oldestQueuedAt
            return taken
        }
        guard !batch.isEmpty else { return false }
        let started = clock()
        switch write(batch) {
        case .success:
            lock.withLock { refusals = 0 }
            settled(batch)
            metrics.recordAckFlush(count: batch.count, latency: clock() - started)
            if batch.contains(where: \.requeuesJob) { requeued() }
            return true
        case .failure(let error) where error.isConnectionLoss:
            putBack(batch)
            return false
        case .failure:
            let tries = lock.withLock { () -> Int in refusals += 1; return refusals }
            guard tries >= configuration.triesBeforeSplit else {
                putBack(batch)
                return false
            }
            lock.withLock { refusals = 0 }
            writeOneByOne(batch)
            return true
        }
    }

    /// The batch was refused several times: find the results that cause it.
    private func writeOneByOne(_ batch: [Acknowledgement]) {
        for item in batch {
            var written = false
            for _ in 0..<configuration.triesBeforeSplit {
                switch write([item]) {
                case .success:
                    settled([item])
                    written = true
                case .failure(let error) where error.isConnectionLoss:
                    // Not this result's fault: keep it for the next round.
                    putBack([item])
                    written = true
                case .failure:
                    continue
                }
                break
            }
            if !written {
                settled([item])
                logger.error("dropped a result the database refuses; the job's lease will expire and it will be rescued",
                             [("result", item.summary)])
                metrics.recordDroppedAcknowledgement()
            }
        }
    }

    private func write(_ batch: [Acknowledgement]) -> Result<Void, StoreError> {
        let jitter = self.jitter()
        return session.run { store in
            try Acknowledgement.write(batch, worker: self.configuration.worker, breakerPolicy: self.configuration.breakerPolicy,
                                      jitter: jitter, archiveSuccesses: self.configuration.archiveSuccesses, to: store)
        }
    }

    /// These results were written (or dropped): their leases need no more renewing.
    private func settled(_ items: [Acknowledgement]) {
        lock.withLock {
            for item in items {
                guard let lease = item.lease, let count = unwritten[lease] else { continue }
                unwritten[lease] = count > 1 ? count - 1 : nil
            }
        }
    }

    private func putBack(_ batch: [Acknowledgement]) {
        lock.withLock {
            pending.insert(contentsOf: batch, at: 0)
            if oldestQueuedAt == nil { oldestQueuedAt = clock() }
        }
    }
}
