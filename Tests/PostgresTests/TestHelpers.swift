import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Creates a database for the calling test, connects, runs `body`, then cleans up.
func withConnection<T>(label: String = #function, _ body: (PostgresConnection, TestDatabase) throws -> T) throws -> T {
    try TestDatabase.with(label: label) { database in
        let connection = try database.connect()
        defer { connection.close() }
        return try body(connection, database)
    }
}

/// An admin connection to the test cluster (for terminating backends).
func adminConnection(_ database: TestDatabase) throws -> PostgresConnection {
    try PostgresConnection.connect(PostgresConfiguration(connectionString: database.adminURL))
}

/// Terminates `pid` from `admin` and waits until the server process is gone, so the
/// victim's socket is closed before the test continues (10 s limit only to avoid hangs).
func terminateBackend(_ pid: Int32, using admin: PostgresConnection) throws {
    let terminated = try admin.query("select pg_terminate_backend(\(pid))")
    #expect(try terminated.rows[0].decode(0, as: Bool.self))
    let gone = try eventuallyBlocking(timeout: .seconds(10), every: .milliseconds(10)) {
        try admin.query("select count(*) from pg_stat_activity where pid = \(pid)").rows[0].decode(0, as: Int.self) == 0
    }
    if gone { return }
    Issue.record("backend \(pid) did not exit within 10 s")
}

/// The connection parameters of a test database, by key.
func parameters(of database: TestDatabase) throws -> [String: String] {
    Dictionary(try PostgresConnectionString.parse(database.url).map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
}
