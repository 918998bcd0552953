import CLibPQ
import Foundation

/// The transaction state of a connection (`PQtransactionStatus`).
public enum PostgresTransactionStatus: Sendable, Hashable {
    case idle, active, inTransaction, inFailedTransaction, unknown
}

/// One libpq connection.
///
/// Not thread-safe: one user at a time. Every call blocks the calling thread until the
/// server answers, so never call it from Swift's cooperative thread pool: give each
/// connection a dedicated thread (as the worker's services do).
///
/// ``query(_:)`` prepares each distinct SQL text once per connection (an LRU cache of
/// ``PostgresConfiguration/statementCacheCapacity`` statements, cleared on reconnect)
/// and then runs it with `PQexecPrepared`. Parameters and results use the text format.
public final class PostgresConnection: @unchecked Sendable {
    public let configuration: PostgresConfiguration
    var handle: OpaquePointer?
    var statements: PostgresStatementCache
    var savepointCounter = 0
    /// The channels this connection listens to; re-LISTENed by ``reconnect()``.
    public internal(set) var listenedChannels: Set<String> = []
    /// True when the session goes through a connection pooler such as PgBouncer: the
    /// server process answering differs from the process id the connection was given at
    /// startup (a pooler hands out its own). A pooled connection prepares no named
    /// statements (in transaction mode a name prepared on one server connection is
    /// missing, or another client's, on the next), and LISTEN on it may not hear.
    public private(set) var isPooled: Bool

    private init(configuration: PostgresConfiguration, handle: OpaquePointer, isPooled: Bool) {
        self.configuration = configuration
        self.handle = handle
        self.isPooled = isPooled
        self.statements = PostgresStatementCache(capacity: configuration.statementCacheCapacity)
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Opens a connection. Throws `.connection` (with libpq's message, never the password).
    public static func connect(_ configuration: PostgresConfiguration) throws -> PostgresConnection {
        let handle = try openHandle(configuration)
        do {
            return PostgresConnection(configuration: configuration, handle: handle, isPooled: try setUpSession(handle))
        } catch {
            PQfinish(handle)
            throw error
        }
    }

    /// Runs ``PostgresConfiguration/sessionSetup`` and returns whether the session is pooled.
    static func setUpSession(_ handle: OpaquePointer) throws -> Bool {
        guard let result = PQexec(handle, PostgresConfiguration.sessionSetup) else {
            throw PostgresError(kind: .connection, message: libpqMessage(handle) ?? "session setup failed", isConnectionLoss: true)
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1, let value = PQgetvalue(result, 0, 0),
              let serverPID = Int32(String(cString: value)) else {
            let message = PQresultErrorMessage(result).map { String(cString: $0).trimmingSpaces() } ?? ""
            throw PostgresError(kind: .connection, message: "session setup failed: " + (message.isEmpty ? "unexpected answer" : message),
                                isConnectionLoss: PQstatus(handle) != CONNECTION_OK)
        }
        let pooled = serverPID != PQbackendPID(handle)
        if pooled {
            // PgBouncer's statement mode drops a client at its first BEGIN (without a
            // message libpq gets to read). Find out now, and say so, rather than fail later
            // in the middle of a transaction and look like an outage.
            if let begin = PQexec(handle, "BEGIN") { PQclear(begin) }
            guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_INTRANS else {
                var error = PostgresError(kind: .connection, message: "the connection pooler ended the session at its first BEGIN: "
                    + "it runs in statement pool mode, which allows no transactions; use pool_mode = transaction or session",
                    isConnectionLoss: false)
                error.isUnsupportedPoolMode = true
                throw error
            }
            if let commit = PQexec(handle, "COMMIT") { PQclear(commit) }
        }
        return pooled
    }

    static func openHandle(_ configuration: PostgresConfiguration) throws -> OpaquePointer {
        let parameters = try configuration.connectParameters()
        let keys = parameters.map { strdup($0.key) }
        let values = parameters.map { strdup($0.value) }
        defer {
            keys.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keyPointers = keys.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let handle = PQconnectdbParams(keyPointers, valuePointers, 0) else {
            throw PostgresError(kind: .connection, message: "libpq could not allocate a connection", isConnectionLoss: true)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = PostgresConnectionString.redactingPasswords(of: configuration.connectionString,
                                                                      in: libpqMessage(handle) ?? "connection failed")
            PQfinish(handle)
            throw PostgresError(kind: .connection, message: message, isConnectionLoss: true)
        }
        silenceNotices(handle)
        return handle
    }

    /// Server notices (e.g. "relation already exists, skipping") are dropped instead of
    /// being printed to stderr by libpq's default processor.
    private static func silenceNotices(_ handle: OpaquePointer) {
        _ = PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    /// The connection's last libpq error message, trimmed.
    static func libpqMessage(_ handle: OpaquePointer) -> String? {
        guard let raw = PQerrorMessage(handle) else { return nil }
        let text = String(cString: raw).trimmingSpaces()
        return text.isEmpty ? nil : text
    }

    func liveHandle() throws -> OpaquePointer {
        guard let handle else { throw PostgresError.closed() }
        return handle
    }

    // MARK: - State

    /// `PQstatus == CONNECTION_OK`. A connection whose server went away reports `true`
    /// until libpq notices (on the next call).
    public var isConnected: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server process id of this session (0 when closed).
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    public var transactionStatus: PostgresTransactionStatus {
        guard let handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .inFailedTransaction
        default: return .unknown
        }
    }

    /// Re-establishes the session (`PQreset`, or a fresh connect after ``close()``),
    /// clears the prepared statement cache and LISTENs again on ``listenedChannels``.
    public func reconnect() throws {
        statements.removeAll()
        if let handle {
            PQreset(handle)
            guard PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(kind: .connection, message: PostgresConnection.libpqMessage(handle) ?? "reconnect failed", isConnectionLoss: true)
            }
            isPooled = try PostgresConnection.setUpSession(handle)
        } else {
            let fresh = try PostgresConnection.openHandle(configuration)
            handle = fresh
            isPooled = try PostgresConnection.setUpSession(fresh)
        }
        for channel in listenedChannels.sorted() {
            try simpleQuery("LISTEN " + quotedIdentifier(channel))
        }
    }

    /// Closes the connection; later calls throw `.closed` (``reconnect()`` reopens it).
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements.removeAll()
    }

    /// Without a round trip: false when libpq already knows the connection is broken or
    /// the server has closed the socket (e.g. the backend was terminated while idle).
    func isUsableWithoutRoundTrip() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        // A terminated backend leaves an error message and then end-of-file in the socket:
        // read (and parse) what is there, a few times, until libpq sees the closed socket.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else { return true }
            guard PQconsumeInput(handle) == 1 else { return false }
            _ = PQisBusy(handle)
            guard PQstatus(handle) == CONNECTION_OK else { return false }
        }
        return true
    }

    // MARK: - Queries

    /// Runs one statement with bound parameters and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) throws -> PostgresResult {
        let handle = try liveHandle()
        let texts = try query.binds.enumerated().map { index, bind in
            let text = bind.postgresText
            if let text, text.utf8.contains(0) {
                throw PostgresError(kind: .invalidArgument, message: "parameter $\(index + 1) contains a NUL character, which PostgreSQL text cannot hold")
            }
            return text
        }
        let types = query.binds.map { type(of: $0).postgresTypeOID }
        let secrets = texts.compactMap { $0 }
        guard statements.capacity > 0, !isPooled else {
            let result = try PostgresConnection.withCStrings(texts) { values in
                try exec(handle, blocking: { PQexecParams(handle, query.sql, Int32(texts.count), types, values, nil, nil, 0) },
                         send: { PQsendQueryParams(handle, query.sql, Int32(texts.count), types, values, nil, nil, 0) })
            }
            return try consume(result, handle: handle, secrets: secrets)
        }
        let key = PostgresStatementCache.key(sql: query.sql, types: types)
        do {
            return try runPrepared(key: key, sql: query.sql, types: types, texts: texts, handle: handle, secrets: secrets)
        } catch let error as PostgresError where PostgresConnection.isStaleStatement(error) {
            // Our prepared statement vanished (DISCARD/DEALLOCATE ALL) or its result shape
            // changed (ALTER TABLE). It did not run, so outside a transaction retry once.
            if let name = statements.remove(key) { deallocate(name, handle: handle) }
            guard transactionStatus == .idle else { throw error }
            return try runPrepared(key: key, sql: query.sql, types: types, texts: texts, handle: handle, secrets: secrets)
        }
    }

    /// Runs one statement and returns the number of affected rows.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> Int {
        try self.query(query).affectedRows
    }

    /// Runs SQL text without parameters through the simple query protocol (`PQexec`).
    /// Several `;`-separated statements are allowed (migrations).
    ///
    /// - Warning: `sql` is sent as is: never build it from untrusted input.
    public func simpleQuery(_ sql: String) throws {
        _ = try simpleQueryWithTag(sql)
    }

    /// `simpleQuery`, returning the last statement's command tag (e.g. `COMMIT`, `ROLLBACK`).
    func simpleQueryWithTag(_ sql: String) throws -> String {
        let handle = try liveHandle()
        guard let result = try exec(handle, blocking: { PQexec(handle, sql) }, send: { PQsendQuery(handle, sql) }) else {
            throw connectionError(handle)
        }
        defer { PQclear(result) }
        try check(result, handle: handle, secrets: [])
        return String(cString: PQcmdStatus(result))
    }

    private func runPrepared(key: String, sql: String, types: [UInt32], texts: [String?], handle: OpaquePointer, secrets: [String]) throws -> PostgresResult {
        let name: String
        if let cached = statements.lookup(key) {
            name = cached
        } else {
            name = statements.nextName()
            guard let prepared = try exec(handle, blocking: { PQprepare(handle, name, sql, Int32(types.count), types) },
                                          send: { PQsendPrepare(handle, name, sql, Int32(types.count), types) }) else {
                throw connectionError(handle)
            }
            defer { PQclear(prepared) }
            try check(prepared, handle: handle, secrets: secrets)
            if let evicted = statements.insert(key, name: name) { deallocate(evicted, handle: handle) }
        }
        let result = try PostgresConnection.withCStrings(texts) { values in
            try exec(handle, blocking: { PQexecPrepared(handle, name, Int32(texts.count), values, nil, nil, 0) },
                     send: { PQsendQueryPrepared(handle, name, Int32(texts.count), values, nil, nil, 0) })
        }
        return try consume(result, handle: handle, secrets: secrets)
    }

    /// Best effort: a statement that cannot be deallocated now lives until the session ends.
    private func deallocate(_ name: String, handle: OpaquePointer) {
        guard transactionStatus == .idle || transactionStatus == .inTransaction else { return }
        if let result = PQexec(handle, "DEALLOCATE \(name)") { PQclear(result) }
    }

    static func isStaleStatement(_ error: PostgresError) -> Bool {
        error.sqlState == "26000" || (error.sqlState == "0A000" && error.message.contains("cached plan must not change result type"))
    }

    /// Calls `body` with NUL-terminated copies of `texts` (`nil` stays a null pointer = SQL NULL).
    static func withCStrings<R>(_ texts: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
        let copies = texts.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        return try body(copies.map { $0.map { UnsafePointer($0) } })
    }

    /// Runs one libpq command: `blocking` (the `PQexec*` call) when no
    /// ``PostgresConfiguration/responseTimeout`` is set; otherwise `send` (its `PQsend*`
    /// twin) and a wait for the answer bounded by the timeout, after which the connection
    /// is closed and a connection loss thrown. Returns what `PQexec*` would: the first
    /// error result, or else the last result (a COPY result at once).
    func exec(_ handle: OpaquePointer, blocking: () -> OpaquePointer?, send: () -> Int32) throws -> OpaquePointer? {
        guard let timeout = configuration.responseTimeout else { return blocking() }
        guard send() == 1 else { throw connectionError(handle) }
        let deadline = ContinuousClock.now + timeout
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                let remaining = deadline - ContinuousClock.now
                let socket = PQsocket(handle)
                guard remaining > .zero, socket >= 0 else {
                    if let kept { PQclear(kept) }
                    close()
                    throw PostgresError(kind: .connection,
                                        message: "no answer from the server within \(timeout) (response timeout); the connection was closed",
                                        isConnectionLoss: true)
                }
                var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, PostgresConnection.milliseconds(remaining))
                if ready < 0 && errno != EINTR {
                    if let kept { PQclear(kept) }
                    throw PostgresError(kind: .connection, message: "poll failed: errno \(errno)", isConnectionLoss: true)
                }
                if ready > 0 && PQconsumeInput(handle) != 1 {
                    if let kept { PQclear(kept) }
                    throw connectionError(handle)
                }
            }
            guard let next = PQgetResult(handle) else { return kept }
            let status = PQresultStatus(next)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                if let kept { PQclear(kept) }
                return next
            }
            if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                PQclear(next)
            } else {
                if let previous = kept { PQclear(previous) }
                kept = next
            }
        }
    }

    /// Quotes an identifier (channel, table) with `PQescapeIdentifier`.
    func quotedIdentifier(_ name: String) throws -> String {
        let handle = try liveHandle()
        guard !name.utf8.contains(0) else {
            throw PostgresError(kind: .invalidArgument, message: "identifier contains a NUL character")
        }
        guard let escaped = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(kind: .invalidArgument, message: PostgresConnection.libpqMessage(handle) ?? "cannot quote identifier")
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }
}
