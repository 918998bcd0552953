import CourierCore
import CourierStore
import Foundation

/// Takes back jobs whose lease expired (their worker died or was cut off). Any worker
/// may do it; the statements are safe to run from many at once.
final class Rescuer: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often: a quarter of the lease, between 1 s and 15 s.
        var interval: Duration

        init(leases: LeaseSettings) {
            interval = leases.rescueInterval
        }
    }

    let name = "courier-rescue"
    let configuration: Configuration
    private let session: StoreSession
    private let logger: Logger
    private let metrics: WorkerMetrics
    private var lastRun: ContinuousClock.Instant?

    init(configuration: Configuration, session: StoreSession, logger: Logger, metrics: WorkerMetrics) {
        self.configuration = configuration
        self.session = session
        self.logger = logger
        self.metrics = metrics
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        if let lastRun, now - lastRun < configuration.interval { return configuration.interval - (now - lastRun) }
        // Held jobs whose breaker closed are released by the traffic keeper, in bounded batches.
        let result = session.run { store -> JobsTable.RescueResult in try store.jobsRescueExpired() }
        guard case .success(let rescued) = result else { return .seconds(1) }
        lastRun = now
        if rescued.requeued + rescued.deadLettered > 0 {
            logger.warning("rescued jobs whose lease expired", [("requeued", rescued.requeued), ("dead_lettered", rescued.deadLettered)])
            metrics.recordRescue(requeued: rescued.requeued, deadLettered: rescued.deadLettered)
        }
        return configuration.interval
    }

    func finish() { session.close() }
}
