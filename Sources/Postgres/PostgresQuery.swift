/// A SQL statement whose values can only travel as bound parameters.
///
/// Literal segments are SQL; every interpolation becomes a `$n` parameter:
///
///     let query: PostgresQuery = "select * from t where id = \(id) and name = \(name)"
///     // sql: "select * from t where id = $1 and name = $2", binds: [id, name]
///
/// The literal type is `StaticString`, so SQL text can only come from source code.
/// Identifiers (table, column, channel names) cannot be parameters; build those with
/// ``init(unsafeSQL:binds:)`` from trusted text only. Do not write `$1`-style
/// placeholders yourself in an interpolated query.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text with `$1…$n` placeholders.
    public private(set) var sql: String
    /// The values for `$1…$n`, in order.
    public private(set) var binds: [any PostgresEncodable]
    /// SQL split around the placeholders this type generated (`binds.count + 1` pieces),
    /// or `nil` for ``init(unsafeSQL:binds:)`` queries, whose placeholders are the caller's.
    private var pieces: [String]?

    public init(stringLiteral value: StaticString) {
        let text = value.description
        self.sql = text
        self.binds = []
        self.pieces = [text]
    }

    public init(stringInterpolation: StringInterpolation) {
        self.binds = stringInterpolation.binds
        self.pieces = stringInterpolation.pieces
        self.sql = PostgresQuery.render(stringInterpolation.pieces)
    }

    /// A query from dynamic SQL text.
    ///
    /// - Warning: `unsafeSQL` is sent as is. Never build it from untrusted input — that is
    ///   SQL injection. Meant for static text such as migrations, or identifiers that were
    ///   validated against a strict whitelist. Values still belong in `binds` (`$1…$n`).
    public init(unsafeSQL: String, binds: [any PostgresEncodable] = []) {
        self.sql = unsafeSQL
        self.binds = binds
        self.pieces = binds.isEmpty ? [unsafeSQL] : nil
    }

    /// Appends another query, renumbering its parameters after this one's:
    ///
    ///     var query: PostgresQuery = "select id from courier.jobs where true"
    ///     if let queue { query.append(" and queue = \(queue)") }
    ///
    /// - Precondition: `other` is not an ``init(unsafeSQL:binds:)`` query with binds
    ///   (its placeholders cannot be renumbered safely).
    public mutating func append(_ other: PostgresQuery) {
        guard let otherPieces = other.pieces else {
            preconditionFailure("PostgresQuery.append: cannot renumber the binds of an unsafeSQL query")
        }
        if var mine = pieces {
            mine[mine.count - 1] += otherPieces[0]
            mine.append(contentsOf: otherPieces.dropFirst())
            pieces = mine
            binds.append(contentsOf: other.binds)
            sql = PostgresQuery.render(mine)
        } else {
            // This query has caller-written placeholders: continue numbering after them.
            var text = sql + otherPieces[0]
            for (offset, piece) in otherPieces.dropFirst().enumerated() {
                text += "$\(binds.count + offset + 1)" + piece
            }
            sql = text
            binds.append(contentsOf: other.binds)
        }
    }

    /// The SQL text and the number of binds; never the bound values.
    public var description: String { "\(sql) [\(binds.count) bind(s)]" }

    private static func render(_ pieces: [String]) -> String {
        var text = pieces[0]
        for (index, piece) in pieces.dropFirst().enumerated() {
            text += "$\(index + 1)" + piece
        }
        return text
    }

    /// Collects literal SQL and bound values.
    public struct StringInterpolation: StringInterpolationProtocol {
        public typealias StringLiteralType = StaticString

        fileprivate var pieces: [String] = [""]
        fileprivate var binds: [any PostgresEncodable] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            pieces[pieces.count - 1] += literal.description
        }

        /// Binds `value` as the next `$n` parameter.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            binds.append(value)
            pieces.append("")
        }

        /// Binds `value` as the next `$n` parameter; `nil` binds NULL (typed as `Value`).
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            binds.append(value)
            pieces.append("")
        }
    }
}
