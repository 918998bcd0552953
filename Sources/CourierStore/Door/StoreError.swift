import Foundation
import Postgres

/// An error from the store, with a code callers can act on. Modules above the store
/// decide on `code`, never on SQLSTATEs or the driver's error type. The description
/// is the server's message, which never echoes bound values.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as far as a caller needs to know.
    public enum Code: Sendable, Equatable {
        /// The database could not be reached, or the connection broke: try again later.
        case connectionLost
        /// A table, function or schema the statement needs does not exist: `jobctl migrate` is due.
        case schemaMissing
        /// A value was refused by a check; `field` names it when the database said which.
        case badInput(field: String?)
        /// A unique constraint refused the write.
        case conflict
        /// A lock or statement timeout fired, or a deadlock was broken: the statement may be retried.
        case timedOut
        /// Any other failure of a statement; the connection is still usable.
        case statementFailed
        /// A connection pooler's mode cannot run Courier (PgBouncer's statement mode): no
        /// retry can help; the message names the mode.
        case unsupportedPoolMode
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// The connection is gone or never came up; retry on a fresh one.
    public var isConnectionLoss: Bool { code == .connectionLost }

    public var description: String { message }

    /// Classifies any error a store operation threw.
    public static func from(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? PostgresError else {
            return StoreError(code: .statementFailed, message: "\(error)")
        }
        if error.isUnsupportedPoolMode {
            return StoreError(code: .unsupportedPoolMode, message: error.message)
        }
        if error.isConnectionLoss || error.kind == .connection {
            return StoreError(code: .connectionLost, message: error.description)
        }
        return StoreError(code: code(forSQLState: error.sqlState, column: error.columnName), message: error.description)
    }

    /// The code for a SQLSTATE (class 08 connection, 42P01/42883/3F000 missing objects,
    /// classes 22 and 23 bad values, 23505 unique, 55P03/57014/40P01 timeouts and deadlocks).
    static func code(forSQLState state: String?, column: String?) -> Code {
        guard let state else { return .statementFailed }
        switch state {
        case "42P01", "42883", "3F000", "42703": return .schemaMissing
        case "23505": return .conflict
        case "23514", "23502": return .badInput(field: column)
        case "55P03", "57014", "40P01", "40001": return .timedOut
        default:
            if state.hasPrefix("08") || state.hasPrefix("57P") { return .connectionLost }
            if state.hasPrefix("22") || state.hasPrefix("23") { return .badInput(field: column) }
            return .statementFailed
        }
    }
}
