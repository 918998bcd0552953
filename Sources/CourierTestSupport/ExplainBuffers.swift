import Foundation
import Postgres

/// Shared buffers (hit + read) `sql` touched, run under EXPLAIN (ANALYZE, BUFFERS) in a
/// transaction that is rolled back, so nothing it writes stays. Statements a function runs
/// count too. Tests of what a statement reads assert on this, never on time.
/// - Parameter prelude: run first in the same transaction (e.g. `set_config(..., true)`).
public func explainBuffers(_ sql: String, _ binds: [any PostgresEncodable], prelude: PostgresQuery? = nil,
                           on db: PostgresConnection) throws -> Int {
    try db.simpleQuery("begin")
    defer { try? db.simpleQuery("rollback") }
    if let prelude { _ = try db.query(prelude) }
    let text = try db.query(PostgresQuery(unsafeSQL: "explain (analyze, buffers, format json) " + sql, binds: binds))
        .rows[0].decode(0, as: String.self)
    guard let plans = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]],
          let plan = plans.first?["Plan"] as? [String: Any] else {
        throw ExplainError(text: text)
    }
    return (plan["Shared Hit Blocks"] as? Int ?? 0) + (plan["Shared Read Blocks"] as? Int ?? 0)
}

/// EXPLAIN's answer was not the JSON plan expected.
public struct ExplainError: Error, CustomStringConvertible {
    public var text: String
    public var description: String { "unexpected EXPLAIN output: \(text.prefix(200))" }
}
