import Postgres

/// A second session holding a repeatable-read snapshot open, as a report query or a
/// `pg_dump` elsewhere would: the xmin horizon stands still, so no dead version of a row
/// changed after it can be vacuumed away (or marked dead in an index) until ``release()``.
public final class SnapshotHolder {
    private let connection: PostgresConnection

    /// Opens the session on `url` and takes its snapshot (with one read).
    public convenience init(url: String) throws {
        try self.init(connection: PostgresConnection.connect(PostgresConfiguration(connectionString: url)))
    }

    /// Takes the snapshot on `connection` (with one read); the holder closes it when done.
    public init(connection: PostgresConnection) throws {
        self.connection = connection
        try connection.simpleQuery("begin isolation level repeatable read")
        _ = try connection.query("select count(*) from courier.workers")
    }

    /// Ends the transaction: the horizon moves on.
    public func release() throws { try connection.simpleQuery("rollback") }

    deinit { connection.close() }
}
