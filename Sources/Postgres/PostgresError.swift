import Foundation

/// An error from the `Postgres` module.
///
/// Errors are values: `kind` says what failed, the optional fields carry what the
/// server reported (`PQresultErrorField`). The ``description`` is safe to log: it never
/// contains bound parameter values — any bound value (4+ characters) that the server
/// echoes in its message, detail or hint is replaced by `<redacted>` when the error is
/// created, so the stored fields are clean as well, and the values of a row that breaks
/// a constraint (`Failing row contains (…)`) are not kept at all.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What kind of operation failed.
    public enum Kind: Sendable, Hashable {
        /// Connecting failed, or the connection was lost (see ``PostgresError/isConnectionLoss``).
        case connection
        /// The server rejected a statement.
        case query
        /// The server answered in a way this wrapper does not expect (e.g. a COPY where none was asked).
        case protocolViolation
        /// A result value could not be decoded as the requested Swift type.
        case decoding
        /// A COPY FROM STDIN failed on the client side.
        case copy
        /// The connection or pool was closed by its owner.
        case closed
        /// COMMIT found the transaction already failed; the server rolled it back.
        case transactionRolledBack
        /// A value handed to the API is unusable (e.g. a bound string containing NUL).
        case invalidArgument
    }

    /// The step of ``PostgresConnection/withTransaction(_:)`` that failed, when it was not the body.
    public enum TransactionStep: String, Sendable, Hashable {
        case begin = "BEGIN"
        case commit = "COMMIT"
        case rollback = "ROLLBACK"
    }

    public var kind: Kind
    /// The five-character SQLSTATE code, when the server sent one.
    public var sqlState: String?
    /// The primary message (`PG_DIAG_MESSAGE_PRIMARY`) or libpq's own message.
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraintName: String?
    public var columnName: String?
    public var tableName: String?
    public var schemaName: String?
    /// Set when a transaction's BEGIN, COMMIT or ROLLBACK (not its body) failed.
    public var transactionStep: TransactionStep?
    /// True when the connection is unusable: socket gone, server terminated the backend,
    /// admin shutdown (SQLSTATE class 08, 57P01...57P03), or libpq reports `CONNECTION_BAD`.
    public var isConnectionLoss: Bool
    /// True when a pooler refused a transaction because of its pool mode (PgBouncer's
    /// `statement` mode): retrying cannot help, so callers should stop and say so.
    public var isUnsupportedPoolMode = false

    public init(
        kind: Kind,
        sqlState: String? = nil,
        message: String,
        detail: String? = nil,
        hint: String? = nil,
        constraintName: String? = nil,
        columnName: String? = nil,
        tableName: String? = nil,
        schemaName: String? = nil,
        transactionStep: TransactionStep? = nil,
        isConnectionLoss: Bool? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraintName = constraintName
        self.columnName = columnName
        self.tableName = tableName
        self.schemaName = schemaName
        self.transactionStep = transactionStep
        self.isConnectionLoss = isConnectionLoss ?? PostgresError.sqlStateMeansConnectionLoss(sqlState)
    }

    /// `SQLSTATE 22023: message (detail: …) (hint: …)`, prefixed with the failed
    /// transaction step when there is one. Never contains bound parameter values.
    public var description: String {
        var text = ""
        if let step = transactionStep { text += "\(step.rawValue) failed: " }
        if let sqlState { text += "SQLSTATE \(sqlState): " } else { text += "\(kind): " }
        text += message
        if let detail, !detail.isEmpty { text += " (detail: \(detail))" }
        if let hint, !hint.isEmpty { text += " (hint: \(hint))" }
        return text
    }

    /// Class 08 (connection exception) and 57P01...57P03 (admin/crash shutdown, cannot connect now).
    static func sqlStateMeansConnectionLoss(_ sqlState: String?) -> Bool {
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// The start of the detail PostgreSQL gives a constraint violation of a row.
    static let failingRow = "Failing row contains"

    /// `detail` without the values of a failing row: PostgreSQL shows every column of a
    /// row that breaks a constraint (`Failing row contains (…)`), as the server renders
    /// them (a `jsonb` re-spaced, so not equal to the bound text that ``redact(_:secrets:)``
    /// removes), and a row may hold credentials: a job's headers, a URL's query.
    static func withholdingRow(_ detail: String?) -> String? {
        guard let detail, detail.hasPrefix(failingRow) else { return detail }
        return failingRow + " (values not shown: they may hold credentials)."
    }

    /// Replaces every occurrence of a bound value (of 4+ characters) in `text`.
    static func redact(_ text: String?, secrets: [String]) -> String? {
        guard var text else { return nil }
        for secret in secrets.sorted(by: { $0.count > $1.count }) where secret.count >= 4 && text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return text
    }
}

extension PostgresError {
    static func closed() -> PostgresError {
        PostgresError(kind: .closed, message: "the connection is closed")
    }
}
