import CourierCore
import CourierStore
import Foundation

/// Waits for NOTIFY on a connection of its own. A notification only wakes: a new
/// job wakes the claimer, a cancellation makes the heartbeater read from the
/// database which running jobs were cancelled. Payloads are never acted on, since
/// any role that can connect may send one.
final class Listener: WorkerService, @unchecked Sendable {
    static let jobsChannel = "courier_jobs"
    static let cancelChannel = "courier_cancel"
    static let channels = [jobsChannel, cancelChannel]

    struct Configuration: Sendable {
        /// The longest one wait for notifications lasts (also how long a stop may wait for it). Default 500 ms.
        var waitSlice: Duration = .milliseconds(500)
    }

    let name = "courier-listen"
    let configuration: Configuration
    private let session: StoreSession
    /// Called when jobs may have arrived (set by the service graph before the thread starts).
    var jobsArrived: @Sendable () -> Void = {}
    /// Called when a cancellation may have been announced (set by the service graph).
    var cancelAnnounced: @Sendable () -> Void = {}
    private var connected = false
    private let listenURLGiven: Bool
    private let pollInterval: Duration
    private let logger: Logger?
    private var warnedPooled = false

    init(configuration: Configuration = Configuration(), session: StoreSession, listenURLGiven: Bool = false,
         pollInterval: Duration = .seconds(1), logger: Logger? = nil) {
        self.listenURLGiven = listenURLGiven
        self.pollInterval = pollInterval
        self.logger = logger
        self.configuration = configuration
        self.session = session
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        switch session.waitForNotifications(timeout: configuration.waitSlice) {
        case .success(let channels):
            if !connected {
                // Notifications sent while we were away are lost: look once.
                connected = true
                jobsArrived()
                cancelAnnounced()
            }
            if channels.contains(Self.jobsChannel) { jobsArrived() }
            if channels.contains(Self.cancelChannel) { cancelAnnounced() }
            if session.connectionIsPooled && !warnedPooled {
                warnedPooled = true
                if session.skippedListen {
                    logger?.warning("the database connection goes through a connection pooler, where LISTEN cannot be trusted: polling every \(DurationParser.format(pollInterval)) and noticing cancellations at heartbeats; give --listen-database-url a direct connection for immediate pickup")
                } else {
                    logger?.warning("--listen-database-url goes through a connection pooler; LISTEN needs a direct connection or session pool mode")
                }
            }
            // Not listening: nothing will arrive; look again rarely (a reconnect may change that).
            if session.skippedListen { return .seconds(60) }
        case .failure:
            connected = false
        }
        return .zero
    }

    func finish() { session.close() }
}
