import CourierCore
import CourierStore
import Foundation

/// Deletes what is kept only for a while: archived successes past the retention,
/// workers long dead, old attempt statistics, and dead letters past their retention.
final class Pruner: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often. Default 60 s (the first round a full interval after start).
        var interval: Duration = .seconds(60)
        var retentionMilliseconds: Int64
        var deadLetterRetentionMilliseconds: Int64?

        init(_ c: WorkerConfiguration) {
            retentionMilliseconds = Int64(c.retention.milliseconds)
            deadLetterRetentionMilliseconds = c.deadLetterRetention.map { Int64($0.milliseconds) }
        }
    }

    let name = "courier-prune"
    let configuration: Configuration
    private let session: StoreSession
    private var lastRun: ContinuousClock.Instant?

    init(configuration: Configuration, session: StoreSession) {
        self.configuration = configuration
        self.session = session
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        guard let lastRun else {
            lastRun = now
            return configuration.interval
        }
        if now - lastRun < configuration.interval { return configuration.interval - (now - lastRun) }
        _ = session.run { store in
            _ = try store.completedJobsPrune(olderThanMilliseconds: self.configuration.retentionMilliseconds)
            _ = try store.workersPruneDead()
            _ = try store.attemptStatsPrune()
            if let keep = self.configuration.deadLetterRetentionMilliseconds {
                _ = try store.deadLettersPurge(olderThanMilliseconds: keep)
            }
        }
        self.lastRun = now
        return configuration.interval
    }

    func finish() { session.close() }
}
