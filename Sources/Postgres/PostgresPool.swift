import Dispatch
import Foundation

/// A small connection pool.
///
/// At most `maxConnections` connections exist; a borrower waits (FIFO) when all are in
/// use. Connections are opened lazily. Blocking libpq work runs on the pool's own
/// concurrent `DispatchQueue`, never on Swift's cooperative pool; async waiters for a
/// free connection do not hold any thread.
///
/// Broken connections heal: after `body` fails with ``PostgresError/isConnectionLoss``
/// (or the connection reports it is no longer connected) the connection is discarded;
/// an idle connection whose server side has gone away is detected without a round
/// trip when it is borrowed and replaced. Callers therefore see at most one error per
/// broken connection, and the next call works once the server is back.
///
/// A connection is returned clean: an open transaction is rolled back and LISTENs are
/// removed. Do not borrow from a pool inside a body of the same pool (it can deadlock
/// when the pool is exhausted).
public final class PostgresPool: @unchecked Sendable {
    public let configuration: PostgresConfiguration
    public let maxConnections: Int

    private let lock = NSLock()
    private var idle: [PostgresConnection] = []
    /// Connections that exist or are being opened (idle + borrowed).
    private var openCount = 0
    private var waiters: [Waiter] = []
    private var isClosed = false
    private let queue = DispatchQueue(label: "courier.postgres.pool", attributes: .concurrent)

    /// A borrower's claim: an idle connection, or the right to open a new one.
    private enum Grant: @unchecked Sendable {
        case existing(PostgresConnection)
        case open
    }

    /// A waiting borrower (guarded by `lock`).
    private final class Waiter: @unchecked Sendable {
        var deliver: (@Sendable (Result<Grant, any Error>) -> Void)?
        var cancelled = false
    }

    public init(configuration: PostgresConfiguration, maxConnections: Int) {
        self.configuration = configuration
        self.maxConnections = max(1, maxConnections)
    }

    deinit {
        for connection in idle { connection.close() }
    }

    /// Borrows a connection (waiting while all are busy), runs `body` with it on a pool
    /// thread, and returns it. Connect failures throw `PostgresError(kind: .connection)`.
    /// Cancelling the task while it waits for a connection throws `CancellationError`.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let grant = try await acquire()
        // The closure only runs while this function waits for it, so it does not escape.
        // The pool thread drops its reference before resuming (checked by withoutActuallyEscaping).
        return try await withoutActuallyEscaping(body) { body in
            let box = BodyBox(body)
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                queue.async {
                    let result: Result<T, any Error>
                    do {
                        result = .success(try self.run(grant, box.take()))
                    } catch {
                        result = .failure(error)
                    }
                    continuation.resume(with: result)
                }
            }
        }
    }

    /// Hands a closure to a pool thread and lets go of it after the single call.
    private final class BodyBox<T>: @unchecked Sendable {
        private var body: (@Sendable (PostgresConnection) throws -> T)?
        init(_ body: @escaping @Sendable (PostgresConnection) throws -> T) { self.body = body }
        func take() -> @Sendable (PostgresConnection) throws -> T {
            defer { body = nil }
            return body!
        }
    }

    /// Like ``withConnection(_:)`` but blocks the calling thread; for CLI code and other
    /// non-async contexts (never from an async function).
    @discardableResult
    public func withConnectionBlocking<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let semaphore = DispatchSemaphore(value: 0)
        let box = ResultBox()
        enqueue(Waiter()) { result in
            box.result = result
            semaphore.signal()
        }
        semaphore.wait()
        return try run(try box.result!.get(), body)
    }

    /// Closes idle connections and fails waiting borrowers with `.closed`; borrowed
    /// connections are closed when they come back. Later borrows throw `.closed`.
    public func close() {
        lock.lock()
        isClosed = true
        let closing = idle
        idle.removeAll()
        openCount -= closing.count
        let failed = waiters
        waiters.removeAll()
        lock.unlock()
        closing.forEach { $0.close() }
        for waiter in failed { deliver(.failure(PostgresPool.closedError()), to: waiter) }
    }

    /// Number of open connections (idle and borrowed), for diagnostics.
    public var connectionCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return openCount
    }

    // MARK: - Borrowing

    private func acquire() async throws -> Grant {
        let waiter = Waiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                enqueue(waiter) { continuation.resume(with: $0) }
            }
        } onCancel: {
            lock.lock()
            waiter.cancelled = true
            let stillWaiting = waiters.contains { $0 === waiter }
            if stillWaiting { waiters.removeAll { $0 === waiter } }
            lock.unlock()
            if stillWaiting { deliver(.failure(CancellationError()), to: waiter) }
        }
    }

    /// Grants at once when possible, otherwise queues the waiter.
    private func enqueue(_ waiter: Waiter, _ deliver: @escaping @Sendable (Result<Grant, any Error>) -> Void) {
        lock.lock()
        waiter.deliver = deliver
        let grant: Result<Grant, any Error>
        if isClosed {
            grant = .failure(PostgresPool.closedError())
        } else if waiter.cancelled {
            grant = .failure(CancellationError())
        } else if let connection = idle.popLast() {
            grant = .success(.existing(connection))
        } else if openCount < maxConnections {
            openCount += 1
            grant = .success(.open)
        } else {
            waiters.append(waiter)
            lock.unlock()
            return
        }
        lock.unlock()
        self.deliver(grant, to: waiter)
    }

    /// Calls the waiter's continuation exactly once, outside the lock.
    private func deliver(_ result: Result<Grant, any Error>, to waiter: Waiter) {
        lock.lock()
        let deliver = waiter.deliver
        waiter.deliver = nil
        lock.unlock()
        deliver?(result)
    }

    /// Runs `body` with the granted connection (opening or healing it first) and gives it back.
    private func run<T>(_ grant: Grant, _ body: (PostgresConnection) throws -> T) throws -> T {
        let connection: PostgresConnection
        do {
            switch grant {
            case .existing(let existing) where existing.isUsableWithoutRoundTrip():
                connection = existing
            case .existing(let broken):
                broken.close()
                connection = try PostgresConnection.connect(configuration)
            case .open:
                connection = try PostgresConnection.connect(configuration)
            }
        } catch {
            giveBackCapacity()
            throw error
        }
        do {
            let value = try body(connection)
            release(connection, discard: !connection.isConnected)
            return value
        } catch {
            let lost = (error as? PostgresError)?.isConnectionLoss ?? false
            release(connection, discard: lost || !connection.isConnected)
            throw error
        }
    }

    /// Returns a connection to the pool (clean), or discards it and frees its slot.
    private func release(_ connection: PostgresConnection, discard: Bool) {
        var keep = !discard && clean(connection)
        lock.lock()
        if isClosed { keep = false }
        if keep, let waiter = popWaiter() {
            lock.unlock()
            deliver(.success(.existing(connection)), to: waiter)
            return
        }
        if keep {
            idle.append(connection)
            lock.unlock()
            return
        }
        lock.unlock()
        connection.close()
        giveBackCapacity()
    }

    /// A slot was freed without a connection: let the next waiter open one.
    private func giveBackCapacity() {
        lock.lock()
        if !isClosed, let waiter = popWaiter() {
            lock.unlock()
            deliver(.success(.open), to: waiter)
            return
        }
        openCount -= 1
        lock.unlock()
    }

    /// Must hold `lock`.
    private func popWaiter() -> Waiter? {
        waiters.isEmpty ? nil : waiters.removeFirst()
    }

    /// Rolls back a transaction left open and drops LISTENs; false when that fails.
    private func clean(_ connection: PostgresConnection) -> Bool {
        switch connection.transactionStatus {
        case .idle: break
        case .inTransaction, .inFailedTransaction:
            guard (try? connection.simpleQuery("ROLLBACK")) != nil else { return false }
        case .active, .unknown:
            return false
        }
        if !connection.listenedChannels.isEmpty {
            guard (try? connection.unlistenAll()) != nil else { return false }
        }
        return true
    }

    private static func closedError() -> PostgresError {
        PostgresError(kind: .closed, message: "the pool is closed")
    }

    private final class ResultBox: @unchecked Sendable {
        var result: Result<Grant, any Error>?
    }
}
