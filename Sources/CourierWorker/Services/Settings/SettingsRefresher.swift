import CourierCore
import CourierStore
import Foundation

/// Keeps the per-queue retry settings (`courier.queue_settings`) and the destinations that
/// opted in to trace propagation (`courier.destinations.propagate_trace`) fresh: operators
/// change them with `jobctl queue set` and `jobctl destination set --propagate-trace`, and
/// every worker follows within seconds. (The propagation flag is read here rather than per
/// claimed job, so claims read nothing more for it.)
final class SettingsRefresher: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often the settings are read. Default 10 s.
        var interval: Duration = .seconds(10)
    }

    let name = "courier-settings"
    let configuration: Configuration
    private let session: StoreSession
    private let policies: Locked<QueuePolicies>
    private let propagation: TracePropagation?
    private var lastRead: ContinuousClock.Instant?

    init(configuration: Configuration = Configuration(), base: RetryPolicy, session: StoreSession,
         propagation: TracePropagation? = nil) {
        self.configuration = configuration
        self.session = session
        self.policies = Locked(QueuePolicies(base: base))
        self.propagation = propagation
    }

    /// The retry policy for a queue: its row in `queue_settings` over the worker's flags.
    func policy(for queue: String) -> RetryPolicy { policies.withLock { $0.policy(for: queue) } }

    /// Reads the settings now through `session` (the claimer does this before its first claim).
    func refresh(using session: StoreSession) {
        if case .success(let rows) = session.run({ try $0.queueSettingsAll() }) {
            policies.withLock { $0.update(rows) }
        }
        if let propagation, case .success(let destinations) = session.run({ try $0.destinationsPropagatingTrace() }) {
            propagation.update(destinations)
        }
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        if let lastRead, now - lastRead < configuration.interval { return configuration.interval - (now - lastRead) }
        refresh(using: session)
        lastRead = now
        return configuration.interval
    }

    func finish() { session.close() }
}
