import CourierTestSupport
import Foundation
@testable import Postgres
import Testing

@Suite struct ConnectionTests {
    @Test func keyValueAndURIFormsBothConnect() throws {
        try TestDatabase.with { database in
            let parameters = try parameters(of: database)
            let host = try #require(parameters["host"] ?? parameters["hostaddr"])
            let port = parameters["port"] ?? "5432"
            let user = parameters["user"].map { $0 + "@" } ?? ""
            // A Unix-socket directory is a path: in a URI's host it must be percent-encoded.
            let uriHost = host.hasPrefix("/") ? host.replacingOccurrences(of: "/", with: "%2F") : host
            let uri = "postgresql://\(user)\(uriHost):\(port)/\(database.name)?application_name=via-uri"
            let keyValue = "host=\(host) port=\(port) dbname=\(database.name)" + (parameters["user"].map { " user=\($0)" } ?? "")
            for (connectionString, expectedName) in [(uri, "via-uri"), (keyValue, "courier")] {
                let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: connectionString))
                defer { connection.close() }
                let row = try connection.query("select current_database(), current_setting('application_name')").rows[0]
                #expect(try row.decode(0, as: String.self) == database.name)
                #expect(try row.decode(1, as: String.self) == expectedName)
            }
        }
    }

    @Test func applicationNameIsApplied() throws {
        try TestDatabase.with { database in
            let connection = try database.connect(applicationName: "courier-worker-7")
            defer { connection.close() }
            let row = try connection.query("select application_name from pg_stat_activity where pid = pg_backend_pid()").rows[0]
            #expect(try row.decode(0, as: String.self) == "courier-worker-7")
        }
    }

    @Test func reconnectAfterBackendTermination() throws {
        try withConnection { connection, database in
            let admin = try adminConnection(database)
            defer { admin.close() }
            _ = try connection.query("select \(1)")
            let oldPID = connection.backendPID
            try terminateBackend(oldPID, using: admin)
            let error = #expect(throws: PostgresError.self) { try connection.query("select \(1)") }
            #expect(error?.isConnectionLoss == true)
            #expect(error?.kind == .connection)
            #expect(!connection.isConnected)
            try connection.reconnect()
            #expect(connection.isConnected)
            #expect(connection.backendPID != oldPID)
            // The statement cache was cleared: the same SQL is prepared again on the new session.
            #expect(try connection.query("select \(1)").rows[0].decode(0, as: Int.self) == 1)
            #expect(try connection.query("select current_setting('TimeZone')").rows[0].decode(0, as: String.self) == "UTC")
        }
    }

    @Test func terminatedIdleConnectionIsDetectedWithoutARoundTrip() throws {
        try withConnection { connection, database in
            let admin = try adminConnection(database)
            defer { admin.close() }
            #expect(connection.isUsableWithoutRoundTrip())
            try terminateBackend(connection.backendPID, using: admin)
            _ = eventuallyBlocking(timeout: .seconds(10), every: .milliseconds(10)) { !connection.isUsableWithoutRoundTrip() }
            #expect(!connection.isUsableWithoutRoundTrip())
            #expect(!connection.isConnected)
        }
    }

    @Test func reconnectAfterCloseOpensAgain() throws {
        try withConnection { connection, _ in
            connection.close()
            try connection.reconnect()
            #expect(try connection.query("select 1").rows[0].decode(0, as: Int.self) == 1)
        }
    }

    @Test func preparedStatementsAreReusedAndCapped() throws {
        try TestDatabase.with { database in
            let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url, statementCacheCapacity: 3))
            defer { connection.close() }
            for value in 0..<5 { _ = try connection.query("select \(value) + 1") }
            let prepared = { try connection.query("select count(*) from pg_prepared_statements").rows[0].decode(0, as: Int.self) }
            #expect(try prepared() == 2)  // "select $1 + 1" and the count query
            for value in 0..<6 { _ = try connection.query(PostgresQuery(unsafeSQL: "select \(value) + $1", binds: [value])) }
            #expect(try prepared() <= 3)
        }
    }

    @Test func staleStatementsAreRepreparedTransparently() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (a int)")
            try connection.execute("insert into t values (\(Int32(1)))")
            #expect(try connection.query("select * from t").columns == ["a"])
            try connection.simpleQuery("alter table t add column b text")
            #expect(try connection.query("select * from t").columns == ["a", "b"])
            try connection.simpleQuery("DEALLOCATE ALL")
            #expect(try connection.query("select * from t").rows.count == 1)
        }
    }

    @Test func withoutStatementCacheQueriesStillWork() throws {
        try TestDatabase.with { database in
            let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url, statementCacheCapacity: 0))
            defer { connection.close() }
            #expect(try connection.query("select \("a") || \("b")").rows[0].decode(0, as: String.self) == "ab")
            #expect(try connection.query("select count(*) from pg_prepared_statements").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func simpleQueryRunsSeveralStatements() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table a (x int); create table b (y int); insert into a values (1);")
            #expect(try connection.query("select count(*) from a").rows[0].decode(0, as: Int.self) == 1)
            try connection.simpleQuery("create table if not exists a (x int)")  // notice is not printed
        }
    }

    @Test func testDatabaseNamesAreSafeAndDropWorks() throws {
        let database = try TestDatabase.create(label: "Weird \"label\"; drop database postgres; --()")
        #expect(database.name.hasPrefix("ct_weird_label_drop_database_post_"))
        #expect(database.name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" })
        let connection = try database.connect()
        try database.drop()
        #expect(throws: PostgresError.self) { try connection.query("select 1") }
        connection.close()
        let admin = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.adminURL))
        defer { admin.close() }
        #expect(try admin.query("select count(*) from pg_database where datname = \(database.name)").rows[0].decode(0, as: Int.self) == 0)
    }

    @Test func testDatabaseWithoutEnvironmentFailsClearly() {
        let error = #expect(throws: TestDatabaseError.self) {
            try TestDatabase.create(label: "x", template: nil, environment: [:])
        }
        #expect(error?.description.contains("COURIER_TEST_DATABASE_URL") == true)
    }
}
