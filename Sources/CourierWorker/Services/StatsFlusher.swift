import CourierCore
import CourierStore
import Foundation

/// Counts attempts per queue, destination and class in memory and adds them to the
/// fleet-wide `courier.attempt_stats` every few seconds (and once more at shutdown).
final class StatsFlusher: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often counts are written. Default 5 s.
        var interval: Duration = .seconds(5)
    }

    let name = "courier-stats"
    let configuration: Configuration
    private let session: StoreSession
    private let counts = Locked<[AttemptStatsTable.Key: AttemptStatsTable.Counts]>([:])
    private var lastFlush: ContinuousClock.Instant?

    init(configuration: Configuration = Configuration(), session: StoreSession) {
        self.configuration = configuration
        self.session = session
    }

    /// Counts one attempt.
    func recordAttempt(_ key: AttemptStatsTable.Key, succeededAfterRetry: Bool) {
        counts.withLock { counts in
            counts[key, default: .init()].attempts += 1
            if succeededAfterRetry { counts[key, default: .init()].succeededAfterRetry += 1 }
        }
    }

    /// Counts one retry and its delay.
    func recordRetry(_ key: AttemptStatsTable.Key, delayMilliseconds: Int64) {
        counts.withLock { $0[key, default: .init()].addRetry(delayMilliseconds: delayMilliseconds) }
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        guard let lastFlush else {
            self.lastFlush = now
            return configuration.interval
        }
        if now - lastFlush < configuration.interval { return configuration.interval - (now - lastFlush) }
        flush()
        self.lastFlush = now
        return configuration.interval
    }

    func finish() {
        flush()
        session.close()
    }

    /// Adds the counts gathered so far; on failure they are kept for the next try.
    func flush() {
        let taken = counts.withLock { counts -> [AttemptStatsTable.Key: AttemptStatsTable.Counts] in
            defer { counts.removeAll(keepingCapacity: true) }
            return counts
        }
        guard !taken.isEmpty else { return }
        if case .failure = session.run({ try $0.attemptStatsAdd(taken) }) {
            counts.withLock { counts in
                for (key, value) in taken { counts[key, default: .init()].merge(value) }
            }
        }
    }
}

extension AttemptStatsTable.Counts {
    /// Adds another set of counts to these.
    mutating func merge(_ other: Self) {
        attempts += other.attempts
        retries += other.retries
        succeededAfterRetry += other.succeededAfterRetry
        delayMillisecondsSum += other.delayMillisecondsSum
        for index in delayBuckets.indices { delayBuckets[index] += other.delayBuckets[index] }
    }
}
