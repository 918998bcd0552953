import CourierCore
import Foundation

/// In-process counters for the `/metrics` endpoint and the benchmarks.
/// Fleet-wide figures live in the database; these describe this process.
public final class WorkerMetrics: @unchecked Sendable {
    /// Counts of observations by upper bound, Prometheus style (the last bucket is +Inf).
    public struct Histogram: Sendable, Equatable {
        /// Upper bounds, ascending, without +Inf.
        public let bounds: [Double]
        /// Observations per bucket (not cumulative); one more than `bounds` for +Inf.
        private(set) var counts: [Int]
        public private(set) var sum: Double = 0
        public private(set) var count = 0

        public init(bounds: [Double]) {
            precondition(bounds == bounds.sorted(), "histogram bounds must ascend")
            self.bounds = bounds
            self.counts = [Int](repeating: 0, count: bounds.count + 1)
        }

        public mutating func observe(_ value: Double) {
            let index = bounds.firstIndex { value <= $0 } ?? bounds.count
            counts[index] += 1
            sum += value
            count += 1
        }

        /// Cumulative counts per upper bound, ending with +Inf (which equals `count`).
        public var cumulative: [(le: Double, count: Int)] {
            var running = 0
            var result: [(le: Double, count: Int)] = []
            for (index, bound) in (bounds + [.infinity]).enumerated() {
                running += counts[index]
                result.append((bound, running))
            }
            return result
        }
    }

    private let lock = NSLock()
    private var attemptsByClass: [String: Int] = [:]
    private var succeeded = 0
    private var succeededAfterRetry = 0
    private var retries = 0
    private var deadLettersByReason: [String: Int] = [:]
    private var claimBatches = Histogram(bounds: WorkerMetrics.claimBatchBounds)
    private var ackFlushes = Histogram(bounds: WorkerMetrics.ackLatencyBounds)
    private var ackedJobs = 0
    private var rescuedRequeued = 0
    private var rescuedDeadLettered = 0
    private var refusedByConfiguration = 0
    private var attemptsTotal = 0
    private var fenceAborts = 0
    private var withheld = 0
    private var droppedAcknowledgements = 0
    private var retryDelays = Histogram(bounds: WorkerMetrics.retryDelayBounds)
    private var scheduleLags = Histogram(bounds: WorkerMetrics.scheduleLagBounds)
    private var scheduleMissed = 0
    private var attemptsByQueue: [String: [String: Int]] = [:]
    /// Jobs claimed through the fair claim, per fairness key (at most ``trackedFairnessKeys``).
    private var claimedByFairnessKey: [String: Int] = [:]
    private var outcomesByQueue: [String: [String: Int]] = [:]
    private var requestDurations: [String: Histogram] = [:]
    private var leaseRenewals = Histogram(bounds: WorkerMetrics.leaseRenewalBounds)
    private var spansExported = 0
    private var spansDropped = 0

    /// Seconds one request took, from send to the end of the response (or the failure).
    public static let requestDurationBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// Retry delays in seconds.
    public static let retryDelayBounds: [Double] = [1, 5, 15, 60, 300, 900, 3600]
    /// Jobs per non-empty claim.
    public static let claimBatchBounds: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500]
    /// Seconds one acknowledgement flush (one batch write) took.
    /// Seconds from a schedule's slot to the enqueue of its run.
    public static let scheduleLagBounds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60]
    public static let ackLatencyBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]
    /// Seconds one answered lease renewal round took (the heartbeater's round trip). A
    /// renewal gives up after the heartbeat interval (at least 1 s, at most 10 s), so
    /// answered rounds stay below that.
    public static let leaseRenewalBounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init() {}

    public struct Snapshot: Sendable, Equatable {
        /// Attempts by result: `success` or the error class.
        public var attemptsByClass: [String: Int]
        public var succeeded: Int
        public var succeededAfterRetry: Int
        public var retries: Int
        public var deadLettersByReason: [String: Int]
        /// Non-empty claims.
        public var claimBatches: Int
        public var claimedJobs: Int
        public var claimBatchSizes: Histogram
        public var ackFlushes: Int
        public var ackedJobs: Int
        public var ackLatencySeconds: Double
        public var ackLatency: Histogram
        public var rescuedRequeued: Int
        public var rescuedDeadLettered: Int
        /// Jobs handed back because this worker's configuration cannot run them.
        public var refusedByConfiguration = 0
        /// Jobs aborted (or handed back unstarted) because this worker could not prove their leases.
        public var fenceAborts = 0
        /// Jobs handed back unsent because their destination was held back after the claim.
        public var withheld = 0
        /// Results the database refused even one at a time, dropped (their jobs are rescued when the lease expires).
        public var droppedAcknowledgements: Int
        public var retryDelays: Histogram
        /// Schedule runs this worker enqueued (the count) and their lag from slot to enqueue.
        public var scheduleLags = Histogram(bounds: WorkerMetrics.scheduleLagBounds)
        /// Schedule slots this worker did not run, by the missed-run policy.
        public var scheduleMissed = 0
        /// Attempts by queue, then by result (`success` or the error class).
        public var attemptsByQueue: [String: [String: Int]] = [:]
        /// Decisions by queue, then by outcome (`succeeded`, `retried`, `dead_lettered`).
        public var outcomesByQueue: [String: [String: Int]] = [:]
        /// Request durations by queue.
        public var requestDurations: [String: Histogram] = [:]
        /// How long each answered lease renewal round took (failed rounds are not counted).
        public var leaseRenewals = Histogram(bounds: WorkerMetrics.leaseRenewalBounds)
        /// Jobs claimed through the fair claim, per fairness key label.
        public var claimedByFairnessKey: [String: Int] = [:]
        /// Spans the collector accepted.
        public var spansExported = 0
        /// Spans dropped: the export queue was full, or the collector did not take their batch.
        public var spansDropped = 0
        public var retryDelayBuckets: [(le: Double, count: Int)] { retryDelays.cumulative }
        public var retryDelayCount: Int { retryDelays.count }
        public var retryDelaySum: Double { retryDelays.sum }

        public static func == (a: Snapshot, b: Snapshot) -> Bool {
            a.attemptsByClass == b.attemptsByClass && a.succeeded == b.succeeded && a.retries == b.retries
                && a.deadLettersByReason == b.deadLettersByReason && a.claimedJobs == b.claimedJobs
        }
    }

    public func snapshot() -> Snapshot {
        lock.withLock {
            Snapshot(
                attemptsByClass: attemptsByClass, succeeded: succeeded, succeededAfterRetry: succeededAfterRetry,
                retries: retries, deadLettersByReason: deadLettersByReason, claimBatches: claimBatches.count,
                claimedJobs: Int(claimBatches.sum), claimBatchSizes: claimBatches, ackFlushes: ackFlushes.count,
                ackedJobs: ackedJobs, ackLatencySeconds: ackFlushes.sum, ackLatency: ackFlushes,
                rescuedRequeued: rescuedRequeued, rescuedDeadLettered: rescuedDeadLettered,
                refusedByConfiguration: refusedByConfiguration, fenceAborts: fenceAborts, withheld: withheld,
                droppedAcknowledgements: droppedAcknowledgements, retryDelays: retryDelays,
                scheduleLags: scheduleLags, scheduleMissed: scheduleMissed, attemptsByQueue: attemptsByQueue,
                outcomesByQueue: outcomesByQueue, requestDurations: requestDurations, leaseRenewals: leaseRenewals,
                claimedByFairnessKey: claimedByFairnessKey, spansExported: spansExported, spansDropped: spansDropped)
        }
    }

    func recordAttempt(_ c: Classification, queue: String = "default", duration: Duration? = nil) {
        let key = c.succeeded ? "success" : (c.errorClass?.rawValue ?? "unknown")
        lock.withLock {
            attemptsTotal += 1
            attemptsByClass[key, default: 0] += 1
            attemptsByQueue[queue, default: [:]][key, default: 0] += 1
            if let duration {
                requestDurations[queue, default: Histogram(bounds: Self.requestDurationBounds)].observe(duration.timeInterval)
            }
        }
    }

    func recordSuccess(afterRetry: Bool, queue: String = "default") {
        lock.withLock {
            succeeded += 1
            if afterRetry { succeededAfterRetry += 1 }
            outcomesByQueue[queue, default: [:]]["succeeded", default: 0] += 1
        }
    }

    func recordRetry(delay: Duration, queue: String = "default") {
        let seconds = Double(delay.milliseconds) / 1000
        lock.withLock {
            retries += 1
            retryDelays.observe(seconds)
            outcomesByQueue[queue, default: [:]]["retried", default: 0] += 1
        }
    }

    func recordDeadLetter(reason: DeadLetterReason, queue: String = "default") {
        lock.withLock {
            deadLettersByReason[reason.rawValue, default: 0] += 1
            outcomesByQueue[queue, default: [:]]["dead_lettered", default: 0] += 1
        }
    }

    func recordFenceAborts(_ count: Int) {
        lock.withLock { fenceAborts += count }
    }

    func recordSpansExported(_ count: Int) {
        lock.withLock { spansExported += count }
    }

    func recordSpansDropped(_ count: Int) {
        lock.withLock { spansDropped += count }
    }

    func recordWithheld() {
        lock.withLock { withheld += 1 }
    }

    /// Every attempt recorded so far (refusals are not attempts).
    var attemptsMade: Int { lock.withLock { attemptsTotal } }

    func recordLocalRefusal() {
        lock.withLock { refusedByConfiguration += 1 }
    }

    /// The most fairness keys counted one by one; jobs of further keys are counted under
    /// ``LabelSelection/otherLabel`` (memory stays bounded with millions of tenants).
    static let trackedFairnessKeys = 1000
    /// The label value of the default key (jobs without one).
    public static let defaultFairnessKeyLabel = "(default)"

    /// A fair claim took `counts` jobs per fairness key ("" for the default key).
    func recordFairClaim(_ counts: [String: Int]) {
        guard !counts.isEmpty else { return }
        lock.withLock {
            for (key, n) in counts {
                let label = key.isEmpty ? Self.defaultFairnessKeyLabel : key
                if claimedByFairnessKey[label] != nil || claimedByFairnessKey.count < Self.trackedFairnessKeys {
                    claimedByFairnessKey[label, default: 0] += n
                } else {
                    claimedByFairnessKey[LabelSelection.otherLabel, default: 0] += n
                }
            }
        }
    }

    func recordClaim(batch: Int) {
        guard batch > 0 else { return }
        lock.withLock { claimBatches.observe(Double(batch)) }
    }

    func recordAckFlush(count: Int, latency: Duration) {
        let seconds = latency.timeInterval
        lock.withLock {
            ackFlushes.observe(seconds)
            ackedJobs += count
        }
    }

    /// One lease renewal round (registration, probe leases and job leases, on the
    /// heartbeater's connection) was answered `duration` after it was sent.
    func recordLeaseRenewal(_ duration: Duration) {
        let seconds = duration.timeInterval
        lock.withLock { leaseRenewals.observe(seconds) }
    }

    func recordRescue(requeued: Int, deadLettered: Int) {
        lock.withLock {
            rescuedRequeued += requeued
            rescuedDeadLettered += deadLettered
        }
    }

    func recordDroppedAcknowledgement() {
        lock.withLock { droppedAcknowledgements += 1 }
    }

    func recordScheduleRuns(lags: [Double], missed: Int) {
        lock.withLock {
            for lag in lags { scheduleLags.observe(lag) }
            scheduleMissed += missed
        }
    }
}
