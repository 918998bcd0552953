import CourierCore
import CourierStore
import Foundation

/// Notices when the database becomes unreachable and when it comes back, so an
/// outage is logged once for the whole worker rather than once per try per service;
/// likewise a missing schema, which every service would otherwise report on every try.
final class OutageTracker: @unchecked Sendable {
    private let lock = NSLock()
    private var since: Date?
    private var schemaMissingReported = false
    private let logger: Logger
    private let now: @Sendable () -> Date

    init(logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.logger = logger
        self.now = now
    }

    var isDown: Bool { lock.withLock { since != nil } }

    /// The observer each service's store session reports to.
    var observer: StoreSession.Observer {
        StoreSession.Observer(
            connectionLost: { [self] in failed($0) },
            statementFailed: { [self] in statementFailed($0) },
            succeeded: { [self] in succeeded() })
    }

    func failed(_ error: StoreError) {
        let first = lock.withLock { () -> Bool in
            guard since == nil else { return false }
            since = now()
            return true
        }
        if first {
            logger.error("database unreachable; retrying with backoff", [("error", error.description)])
        }
    }

    func statementFailed(_ error: StoreError) {
        if error.code == .schemaMissing {
            // The claimer says once which migrations are missing; don't repeat it per statement.
            let first = lock.withLock { () -> Bool in defer { schemaMissingReported = true }; return !schemaMissingReported }
            if first { logger.error("statement failed: the schema is missing objects this worker needs", [("error", error.description)]) }
            return
        }
        logger.error("statement failed", [("error", error.description)])
    }

    func succeeded() {
        let started = lock.withLock { () -> Date? in
            defer { since = nil }
            return since
        }
        if let started {
            logger.info("database reachable again", [("outage_s", String(format: "%.1f", now().timeIntervalSince(started)))])
        }
    }
}
