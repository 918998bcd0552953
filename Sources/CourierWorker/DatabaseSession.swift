import CourierCore
import Foundation
import Postgres

/// Notices when the database becomes unreachable and when it comes back, so an
/// outage is logged once for the whole worker rather than once per try per thread.
final class OutageTracker: @unchecked Sendable {
    private let lock = NSLock()
    private var since: Date?
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    var isDown: Bool { lock.withLock { since != nil } }

    func failed(_ error: any Error) {
        let first = lock.withLock { () -> Bool in
            guard since == nil else { return false }
            since = Date()
            return true
        }
        if first {
            logger.error("database unreachable; retrying with backoff", [("error", "\(error)")])
        }
    }

    func succeeded() {
        let started = lock.withLock { () -> Date? in
            defer { since = nil }
            return since
        }
        if let started {
            logger.info("database reachable again", [("outage_s", String(format: "%.1f", Date().timeIntervalSince(started)))])
        }
    }
}

/// A connection owned by one worker thread. Reconnects after the server restarts or
/// the connection is cut, backing off between tries (100 ms doubling to 5 s) so a
/// loop never spins while the database is away.
final class DatabaseSession: @unchecked Sendable {
    private let configuration: PostgresConfiguration
    private let outage: OutageTracker
    private let shouldStop: @Sendable () -> Bool
    private var connection: PostgresConnection?
    private var backoff: Duration = .zero
    private let logger: Logger
    /// Channels to LISTEN on after every (re)connect.
    private let channels: [String]
    /// Called with an error that no retry can cure (a pooler in statement mode).
    private let onFatal: @Sendable (PostgresError) -> Void

    init(configuration: PostgresConfiguration, outage: OutageTracker, logger: Logger, channels: [String] = [],
         shouldStop: @escaping @Sendable () -> Bool, onFatal: @escaping @Sendable (PostgresError) -> Void = { _ in }) {
        self.onFatal = onFatal
        self.configuration = configuration
        self.outage = outage
        self.logger = logger
        self.channels = channels
        self.shouldStop = shouldStop
    }

    /// Runs `body` on a live connection. On failure the error is returned, the outage
    /// noted, and the calling thread has already slept its backoff.
    func run<T>(_ body: (PostgresConnection) throws -> T) -> Result<T, any Error> {
        do {
            let live = try liveConnection()
            let value = try body(live)
            if backoff != .zero {
                backoff = .zero
            }
            outage.succeeded()
            return .success(value)
        } catch let error as PostgresError where error.isUnsupportedPoolMode {
            connection?.close()
            connection = nil
            onFatal(error)
            sleepBackoff()
            return .failure(error)
        } catch let error as PostgresError where !error.isConnectionLoss && error.kind != .connection {
            // The server answered: a statement failed. The connection is still good.
            if connection?.isConnected == false { connection = nil }
            logger.error("statement failed", [("error", "\(error)")])
            sleepBackoff()
            return .failure(error)
        } catch {
            connection?.close()
            connection = nil
            outage.failed(error)
            sleepBackoff()
            return .failure(error)
        }
    }

    /// The live connection, for callers (the listener) that must wait on its socket.
    func liveConnection() throws -> PostgresConnection {
        if let connection, connection.isConnected { return connection }
        connection?.close()
        connection = nil
        let fresh = try PostgresConnection.connect(configuration)
        for channel in channels {
            try fresh.listen(channel)
        }
        connection = fresh
        return fresh
    }

    func close() {
        connection?.close()
        connection = nil
    }

    private func sleepBackoff() {
        backoff = backoff == .zero ? .milliseconds(100) : min(backoff * 2, .seconds(5))
        // Sleep in slices so a shutdown is not delayed by a long backoff, but always
        // sleep the first slice: even while stopping, retries must not spin.
        var left = backoff
        repeat {
            let slice = min(left, .milliseconds(100))
            Thread.sleep(forTimeInterval: slice.timeInterval)
            left -= slice
        } while left > .zero && !shouldStop()
    }
}
