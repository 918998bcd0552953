import CourierCore
import Foundation

/// In-process counters for the `/metrics` endpoint and the benchmarks.
/// Fleet-wide figures live in the database; these describe this process.
public final class WorkerMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var attemptsByClass: [String: Int] = [:]
    private(set) var succeeded = 0
    private(set) var succeededAfterRetry = 0
    private(set) var retries = 0
    private(set) var deadLettersByReason: [String: Int] = [:]
    private(set) var claimBatches = 0
    private(set) var claimedJobs = 0
    private(set) var ackFlushes = 0
    private(set) var ackedJobs = 0
    private(set) var ackLatencyTotal: Duration = .zero
    private(set) var rescuedRequeued = 0
    private(set) var rescuedDeadLettered = 0
    /// Retry delays in seconds, bucketed by upper bound.
    static let retryDelayBuckets: [Double] = [1, 5, 15, 60, 300, 900, 3600]
    private(set) var retryDelayCounts = [Int](repeating: 0, count: retryDelayBuckets.count + 1)
    private(set) var retryDelaySum: Double = 0

    public init() {}

    public struct Snapshot: Sendable, Equatable {
        public var attemptsByClass: [String: Int]
        public var succeeded: Int
        public var succeededAfterRetry: Int
        public var retries: Int
        public var deadLettersByReason: [String: Int]
        public var claimBatches: Int
        public var claimedJobs: Int
        public var ackFlushes: Int
        public var ackedJobs: Int
        public var ackLatencySeconds: Double
        public var rescuedRequeued: Int
        public var rescuedDeadLettered: Int
        public var retryDelayBuckets: [(le: Double, count: Int)]
        public var retryDelayCount: Int
        public var retryDelaySum: Double

        public static func == (a: Snapshot, b: Snapshot) -> Bool {
            a.attemptsByClass == b.attemptsByClass && a.succeeded == b.succeeded && a.retries == b.retries
                && a.deadLettersByReason == b.deadLettersByReason && a.claimedJobs == b.claimedJobs
        }
    }

    public func snapshot() -> Snapshot {
        lock.withLock {
            var cumulative = 0
            var buckets: [(Double, Int)] = []
            for (index, bound) in Self.retryDelayBuckets.enumerated() {
                cumulative += retryDelayCounts[index]
                buckets.append((bound, cumulative))
            }
            cumulative += retryDelayCounts.last ?? 0
            buckets.append((.infinity, cumulative))
            return Snapshot(
                attemptsByClass: attemptsByClass, succeeded: succeeded, succeededAfterRetry: succeededAfterRetry,
                retries: retries, deadLettersByReason: deadLettersByReason, claimBatches: claimBatches,
                claimedJobs: claimedJobs, ackFlushes: ackFlushes, ackedJobs: ackedJobs,
                ackLatencySeconds: Double(ackLatencyTotal.milliseconds) / 1000, rescuedRequeued: rescuedRequeued,
                rescuedDeadLettered: rescuedDeadLettered, retryDelayBuckets: buckets, retryDelayCount: cumulative,
                retryDelaySum: retryDelaySum)
        }
    }

    func recordAttempt(_ c: Classification) {
        let key = c.succeeded ? "success" : (c.errorClass?.rawValue ?? "unknown")
        lock.withLock { attemptsByClass[key, default: 0] += 1 }
    }

    func recordSuccess(afterRetry: Bool) {
        lock.withLock {
            succeeded += 1
            if afterRetry { succeededAfterRetry += 1 }
        }
    }

    func recordRetry(delay: Duration) {
        let seconds = Double(delay.milliseconds) / 1000
        lock.withLock {
            retries += 1
            retryDelaySum += seconds
            let index = Self.retryDelayBuckets.firstIndex { seconds <= $0 } ?? Self.retryDelayBuckets.count
            retryDelayCounts[index] += 1
        }
    }

    func recordDeadLetter(reason: DeadLetterReason) {
        lock.withLock { deadLettersByReason[reason.rawValue, default: 0] += 1 }
    }

    func recordClaim(batch: Int) {
        guard batch > 0 else { return }
        lock.withLock {
            claimBatches += 1
            claimedJobs += batch
        }
    }

    func recordAckFlush(count: Int, latency: Duration) {
        lock.withLock {
            ackFlushes += 1
            ackedJobs += count
            ackLatencyTotal += latency
        }
    }

    func recordRescue(requeued: Int, deadLettered: Int) {
        lock.withLock {
            rescuedRequeued += requeued
            rescuedDeadLettered += deadLettered
        }
    }
}
