import CourierCore
import CourierStore
import Foundation

/// Keeps courier.jobs small whatever snapshot another session holds: once a second it
/// truncates the ring slots whose jobs have all left and moves what still waits in the slot
/// that takes new jobs next to courier.jobs_parked (`courier.reclaim_jobs`, sql/0048).
///
/// Any worker may run it; the function lets one at a time do the work. While a round moves
/// full batches it goes on, within `budget`, so a backlog that outlived its slot is moved
/// before the slot's turn comes again.
final class Reclaimer: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often. Default 1 s (a slot takes new jobs for 15 s).
        var interval: Duration = .seconds(1)
        /// Jobs moved per statement. Default 5,000.
        var moveLimit = 5000
        /// How long one round may keep moving. Default 2 s.
        var budget: Duration = .seconds(2)
    }

    let name = "courier-reclaim"
    let configuration: Configuration
    private let session: StoreSession
    private let logger: Logger
    private let clock: @Sendable () -> ContinuousClock.Instant
    /// False until the schema has migration 0048 (the worker's own check).
    private let mayRun: @Sendable () -> Bool
    private var lastRun: ContinuousClock.Instant?

    init(configuration: Configuration = Configuration(), session: StoreSession, logger: Logger,
         clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }, mayRun: @escaping @Sendable () -> Bool) {
        self.configuration = configuration
        self.session = session
        self.logger = logger
        self.clock = clock
        self.mayRun = mayRun
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        if let lastRun, now - lastRun < configuration.interval { return configuration.interval - (now - lastRun) }
        lastRun = now
        guard mayRun() else { return configuration.interval }
        let start = clock()
        var moved = 0
        var truncated: [String] = []
        while true {
            guard case .success(let result) = session.run({ try $0.jobsReclaim(moveLimit: self.configuration.moveLimit) }) else { break }
            moved += result.moved
            truncated += result.truncated
            if result.moved < configuration.moveLimit || clock() - start >= configuration.budget { break }
        }
        // Both happen every minute in a busy queue: debug, not info.
        if moved > 0 {
            logger.debug("moved jobs that outlived their slot to courier.jobs_parked", [("jobs", moved)])
        }
        if !truncated.isEmpty {
            logger.debug("truncated drained slots", [("slots", truncated.joined(separator: ","))])
        }
        return configuration.interval
    }

    func finish() { session.close() }
}
