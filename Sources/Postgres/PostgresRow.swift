import Foundation

/// One result row: the values in PostgreSQL's text format (`nil` = NULL).
public struct PostgresRow: Sendable {
    /// The values in column order.
    public let values: [String?]
    let columnIndex: PostgresColumnIndex

    init(values: [String?], columnIndex: PostgresColumnIndex) {
        self.values = values
        self.columnIndex = columnIndex
    }

    /// The column names in order.
    public var columns: [String] { columnIndex.names }

    /// True when the value at `column` is NULL (or the column does not exist).
    public func isNull(_ column: Int) -> Bool {
        guard values.indices.contains(column) else { return true }
        return values[column] == nil
    }

    /// The raw text of the first column named `name`; `nil` for NULL or no such column.
    public subscript(_ name: String) -> String? {
        guard let index = columnIndex.index(of: name) else { return nil }
        return values[index]
    }

    /// The raw text at `column`; `nil` for NULL or no such column.
    public subscript(_ column: Int) -> String? {
        values.indices.contains(column) ? values[column] : nil
    }

    // The decoders are inlinable so that callers get them specialized for their types: the
    // claim decodes 22 columns of up to 200 rows a round, and the generic versions looked up
    // `Optional<T>`'s metadata at run time for every value.

    /// Decodes a non-NULL value. Throws `.decoding` naming the column for NULL,
    /// a missing column or a value that does not parse as `T`.
    @inlinable
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T {
        guard let value = try decodeOptional(column, as: T.self) else {
            throw failure(column, "is NULL; decode as \(T.self)? to accept NULL")
        }
        return value
    }

    /// Decodes a value that may be NULL (`nil`).
    @inlinable
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T?.Type) throws -> T? {
        try decodeOptional(column, as: T.self)
    }

    /// Decodes a non-NULL value by column name (first column with that name).
    public func decode<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        try decode(try index(of: name), as: T.self)
    }

    /// Decodes a value that may be NULL by column name.
    public func decode<T: PostgresDecodable>(_ name: String, as type: T?.Type) throws -> T? {
        try decodeOptional(try index(of: name), as: T.self)
    }

    /// Decodes a value that may be NULL (`nil`).
    @inlinable
    public func decodeOptional<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T? {
        guard values.indices.contains(column) else { throw missingColumn(column) }
        guard let text = values[column] else { return nil }
        do {
            return try T(postgresText: text)
        } catch {
            throw failure(column, decoding: T.self, error)
        }
    }

    private func index(of name: String) throws -> Int {
        guard let index = columnIndex.index(of: name) else {
            throw PostgresError(kind: .decoding, message: "no column named \"\(name)\"", columnName: name)
        }
        return index
    }

    private func columnLabel(_ column: Int) -> String {
        "\"\(columnIndex.names[column])\" (index \(column))"
    }

    @usableFromInline
    func failure(_ column: Int, _ reason: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "column \(columnLabel(column)) \(reason)", columnName: columnIndex.names[column])
    }

    @usableFromInline
    func missingColumn(_ column: Int) -> PostgresError {
        PostgresError(kind: .decoding, message: "no column at index \(column) (row has \(values.count))")
    }

    /// `error`, thrown while decoding `column` as `type`, named with the column.
    @usableFromInline
    func failure(_ column: Int, decoding type: Any.Type, _ error: any Error) -> PostgresError {
        guard var error = error as? PostgresError else { return failure(column, "cannot decode as \(type)") }
        error.message = "column \(columnLabel(column)): \(error.message)"
        error.columnName = columnIndex.names[column]
        return error
    }
}

/// Column names and a name lookup, shared by all rows of one result. The lookup table is
/// built on the first lookup by name: most statements (the claim, the acknowledgements)
/// decode by position, and building it for every result cost them a dictionary each.
final class PostgresColumnIndex: @unchecked Sendable {
    let names: [String]
    private let lock = NSLock()
    private var positions: [String: Int]?

    init(names: [String]) {
        self.names = names
    }

    func index(of name: String) -> Int? {
        lock.withLock {
            if let positions { return positions[name] }
            var built: [String: Int] = [:]
            for (index, name) in names.enumerated() where built[name] == nil { built[name] = index }
            positions = built
            return built[name]
        }
    }
}

/// The outcome of one statement.
public struct PostgresResult: Sendable {
    public var rows: [PostgresRow]
    public var columns: [String]
    /// Rows affected (INSERT/UPDATE/DELETE/MERGE/COPY) or returned (SELECT); 0 otherwise.
    public var affectedRows: Int

    public init(rows: [PostgresRow], columns: [String], affectedRows: Int) {
        self.rows = rows
        self.columns = columns
        self.affectedRows = affectedRows
    }

    /// The first row, if any.
    public var first: PostgresRow? { rows.first }
}
