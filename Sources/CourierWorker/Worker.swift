import CourierCore
import CourierStore
import Foundation
import Postgres

/// A `jobworker` process's runtime: leases jobs, runs them with bounded
/// concurrency, turns every outcome into one decision and writes it back fenced by
/// the lease; renews leases, rescues expired ones, and shuts down gracefully.
///
/// The database loops (claim, acknowledge, maintenance, listen) each own a dedicated
/// thread and connection, because libpq calls block; jobs themselves run as Swift
/// tasks, so a slow request holds no thread.
public final class Worker: @unchecked Sendable {
    public let id = UUID()
    public let configuration: WorkerConfiguration
    let logger: Logger
    let metrics: WorkerMetrics
    var handlers: [String: any JobHandler] = [:]

    // State shared by the threads and the job tasks, guarded by `lock`.
    let lock = NSLock()
    var stopping = false
    var inFlight: [Int64: InFlightJob] = [:]
    var random = SystemRandomNumberGenerator()
    /// Breaker evidence per destination since the last report, and when this worker
    /// last reported failures for it (pure-success evidence is only worth a write
    /// while failures are being counted).
    var evidence: [String: BreakerEvidence] = [:]
    var lastFailureReport: [String: ContinuousClock.Instant] = [:]
    /// Attempt counts not yet added to `courier.attempt_stats`.
    var attemptCounts: [AttemptStatsTable.Key: AttemptStatsTable.Counts] = [:]
    var queuePolicies: QueuePolicies
    /// The earliest time a job this worker retried falls due: the claim loop wakes
    /// then instead of waiting for the next poll, so short backoffs stay short.
    var nextRetryDue: ContinuousClock.Instant?
    /// Migrations this worker was built with that the database has not applied; the
    /// worker claims nothing while any are missing (guarded by `lock`).
    var missingMigrationNames: [String] = []

    let acknowledgements = AcknowledgementBuffer()
    let claimSignal = ThreadSignal()
    let ackSignal = ThreadSignal()
    let maintenanceSignal = ThreadSignal()
    let schedulerSignal = ThreadSignal()
    let outage: OutageTracker
    let finished = DispatchGroup()
    var shutdownStarted = false
    /// Set by the graceful shutdown once no job is left to finish: the acknowledging
    /// thread writes what is left and exits.
    var drained = false
    /// Set when the final writes could not be made before exiting (database down).
    var ackGiveUp = false

    struct InFlightJob {
        var job: ClaimedJob
        var task: Task<Void, Never>?
        var started = false
        var cancelledByOperator = false
        var abortedByShutdown = false
        /// Set when this job is its destination's half-open probe.
        var probeGeneration: Int64?
    }

    /// - Parameters:
    ///   - httpHandler: runs the built-in `http` kind (normally `HTTPJobHandler`); `noop` is
    ///     built in too, and other kinds are added with `register(kind:handler:)`.
    public init(configuration: WorkerConfiguration, httpHandler: any JobHandler, logger: Logger,
                metrics: WorkerMetrics = WorkerMetrics()) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.outage = OutageTracker(logger: logger)
        self.queuePolicies = QueuePolicies(base: configuration.retryPolicy)
        handlers["http"] = httpHandler
        handlers["noop"] = NoopJobHandler()
    }

    /// Registers a handler for a job kind (enqueued with `courier.enqueue_job(kind, args)`). Call before `run`.
    public func register(kind: String, handler: any JobHandler) {
        lock.withLock { handlers[kind] = handler }
    }

    /// True once a graceful shutdown has begun.
    public var isStopping: Bool { lock.withLock { stopping } }

    /// Jobs this worker holds right now.
    public var inFlightCount: Int { lock.withLock { inFlight.count } }

    /// Migrations this worker needs that the database lacks, as last checked; it claims
    /// nothing until they are applied (`jobctl migrate`).
    public var missingMigrations: [String] { lock.withLock { missingMigrationNames } }

    /// Whether the database answered the last time any loop asked.
    public var isDatabaseReachable: Bool { !outage.isDown }

    /// Runs until `shutdown()` (or SIGTERM/SIGINT via `ShutdownSignals`) and the
    /// graceful shutdown completes.
    public func run() async {
        logger.info("worker starting", [
            ("worker", id.uuidString.lowercased()), ("queues", configuration.queues.joined(separator: ",")),
            ("concurrency", configuration.concurrency), ("lease", DurationParser.format(configuration.lease)),
        ])
        startThread("courier-claim", claimLoop)
        startThread("courier-ack", acknowledgeLoop)
        startThread("courier-maintenance", maintenanceLoop)
        startThread("courier-listen", listenLoop)
        startThread("courier-scheduler", schedulerLoop)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finished.notify(queue: .global()) { continuation.resume() }
        }
        logger.info("worker stopped", [("worker", id.uuidString.lowercased())])
    }

    /// Begins a graceful shutdown: no new leases; in-flight jobs get the grace to
    /// finish; claimed jobs that have not started go back at once without using an
    /// attempt; what still runs after the grace is aborted and handed back.
    public func shutdown() {
        let first = lock.withLock { () -> Bool in
            defer { stopping = true; shutdownStarted = true }
            return !shutdownStarted
        }
        guard first else { return }
        logger.info("shutdown requested", [("in_flight", inFlightCount), ("grace", DurationParser.format(configuration.shutdownGrace))])
        claimSignal.signal()
        maintenanceSignal.signal()
        schedulerSignal.signal()
    }

    func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        finished.enter()
        let thread = Thread { [finished] in
            body()
            finished.leave()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    func makeSession(channels: [String] = []) -> DatabaseSession {
        DatabaseSession(configuration: configuration.database, outage: outage, logger: logger, channels: channels,
                        shouldStop: { [weak self] in self?.isStopping ?? true })
    }
}

/// The version string workers register with.
public enum CourierVersion {
    public static let current = "0.1.0"
}
