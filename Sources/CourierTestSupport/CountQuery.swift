import Postgres

/// The first column of the first row of `sql` as an Int: mostly a `count(*)`. For SQL tests
/// that assert on how many rows a statement left.
public func count(_ sql: String, on db: PostgresConnection) throws -> Int {
    try db.query(PostgresQuery(unsafeSQL: sql, binds: [])).rows[0].decode(0, as: Int.self)
}
