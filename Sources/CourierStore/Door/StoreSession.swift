import Foundation
import Postgres

/// One connection owned by one thread of a worker, reconnected on demand. Every
/// operation runs through `run`, which turns any failure into a `StoreError`; on a
/// lost connection the next `run` connects afresh. Backoff between failed tries
/// (100 ms doubling to 5 s) is slept through `pause`, which the owning service
/// makes wake early when it is told to stop.
public final class StoreSession: @unchecked Sendable {
    /// What a session reports to its owner.
    public struct Observer: Sendable {
        /// The database could not be reached or the connection broke.
        public var connectionLost: @Sendable (StoreError) -> Void
        /// A statement failed on a live connection.
        public var statementFailed: @Sendable (StoreError) -> Void
        /// A statement succeeded (the database is reachable).
        public var succeeded: @Sendable () -> Void

        public init(connectionLost: @escaping @Sendable (StoreError) -> Void = { _ in },
                    statementFailed: @escaping @Sendable (StoreError) -> Void = { _ in },
                    succeeded: @escaping @Sendable () -> Void = {}) {
            self.connectionLost = connectionLost
            self.statementFailed = statementFailed
            self.succeeded = succeeded
        }
    }

    private let configuration: DatabaseConfiguration
    private let channels: [String]
    private let observer: Observer
    private let pause: (Duration) -> Void
    private let statementTimeout: Duration?
    private var connection: PostgresConnection?
    private var backoff: Duration = .zero
    private let onUnsupportedPoolMode: @Sendable (StoreError) -> Void
    private let shouldListen: @Sendable (_ connectionIsPooled: Bool) -> Bool

    /// Whether the current connection goes through a pooler (see `PostgresConnection.isPooled`).
    public private(set) var connectionIsPooled = false
    /// True when the current connection did not LISTEN because `shouldListen` said no.
    public private(set) var skippedListen = false

    /// - Parameters:
    ///   - channels: channels to LISTEN on after every (re)connect.
    ///   - statementTimeout: set on every direct (not pooled) connection, for sessions whose
    ///     statements must never wait long. A client-side bound that also holds through a
    ///     pooler is ``DatabaseConfiguration/responseTimeout``.
    ///   - pause: sleeps the backoff after a failure; may return early when the owner stops.
    ///   - onUnsupportedPoolMode: told when the pooler's mode cannot work (the owner stops).
    ///   - shouldListen: whether to LISTEN on a fresh connection, given whether it is pooled.
    public init(configuration: DatabaseConfiguration, channels: [String] = [], statementTimeout: Duration? = nil,
                observer: Observer = Observer(), pause: @escaping (Duration) -> Void,
                onUnsupportedPoolMode: @escaping @Sendable (StoreError) -> Void = { _ in },
                shouldListen: @escaping @Sendable (_ connectionIsPooled: Bool) -> Bool = { _ in true }) {
        self.onUnsupportedPoolMode = onUnsupportedPoolMode
        self.shouldListen = shouldListen
        self.configuration = configuration
        self.statementTimeout = statementTimeout
        self.channels = channels
        self.observer = observer
        self.pause = pause
    }

    /// Runs `body` against the store on a live connection. On failure the error is
    /// returned classified, the observer told, and the backoff already slept.
    public func run<T>(_ body: (any WorkerStore) throws -> T) -> Result<T, StoreError> {
        do {
            let live = try liveConnection()
            let value = try body(PostgresWorkerStore(connection: live))
            backoff = .zero
            observer.succeeded()
            return .success(value)
        } catch {
            let failure = StoreError.from(error)
            if failure.code == .unsupportedPoolMode { onUnsupportedPoolMode(failure) }
            if failure.isConnectionLoss || connection?.isConnected == false {
                connection?.close()
                connection = nil
                observer.connectionLost(failure)
            } else {
                observer.statementFailed(failure)
            }
            sleepBackoff()
            return .failure(failure)
        }
    }

    /// Waits up to `timeout` for notifications on the channels this session listens
    /// on; returns the channels that fired (payloads are not read: a notification
    /// only wakes, anyone may send one).
    public func waitForNotifications(timeout: Duration) -> Result<[String], StoreError> {
        do {
            let live = try liveConnection()
            let notes = try live.waitForNotifications(timeout: timeout)
            backoff = .zero
            observer.succeeded()
            return .success(notes.map(\.channel))
        } catch {
            let failure = StoreError.from(error)
            if failure.code == .unsupportedPoolMode { onUnsupportedPoolMode(failure) }
            connection?.close()
            connection = nil
            observer.connectionLost(failure)
            sleepBackoff()
            return .failure(failure)
        }
    }

    public func close() {
        connection?.close()
        connection = nil
    }

    private func liveConnection() throws -> PostgresConnection {
        if let connection, connection.isConnected { return connection }
        connection?.close()
        connection = nil
        let fresh = try PostgresConnection.connect(configuration)
        // Not through a pooler: a session setting there stays on the server connection
        // and reaches whichever client is lent it next.
        if !fresh.isPooled {
            // No JIT: a worker's statements are short, and a misestimate that crosses
            // jit_above_cost makes every claim pay a compilation of 100s of ms.
            let milliseconds = statementTimeout.map { String($0.milliseconds) }
            _ = try fresh.query("""
                select set_config('jit', 'off', false), set_config('statement_timeout', coalesce(\(milliseconds), current_setting('statement_timeout')), false)
                """)
        }
        connectionIsPooled = fresh.isPooled
        skippedListen = !channels.isEmpty && !shouldListen(fresh.isPooled)
        if !skippedListen {
            for channel in channels {
                try fresh.listen(channel)
            }
        }
        connection = fresh
        return fresh
    }

    private func sleepBackoff() {
        backoff = backoff == .zero ? .milliseconds(100) : min(backoff * 2, .seconds(5))
        pause(backoff)
    }
}
