import Foundation
import Postgres

/// A fresh, uniquely named database on the test cluster, one per test.
///
/// The cluster is given by `COURIER_TEST_DATABASE_URL` (an admin URL or conninfo, e.g.
/// `postgresql://courier@127.0.0.1:54320/postgres`). When it is unset or unreachable,
/// ``create(label:template:)`` throws a clear error — tests never skip silently.
public struct TestDatabase: Sendable {
    /// The environment variable naming the admin connection.
    public static let environmentVariable = "COURIER_TEST_DATABASE_URL"

    /// Connection string (key=value conninfo) of the new database.
    public var url: String
    /// The database name (`[a-z0-9_]` only).
    public var name: String
    /// The admin connection string the database was created through.
    public var adminURL: String

    /// Creates `ct_<label>_<random>` (label sanitized to `[a-z0-9_]`), optionally as a copy
    /// of `template` (which must have no open connections).
    public static func create(label: String = #function, template: String? = nil) throws -> TestDatabase {
        try create(label: label, template: template, environment: ProcessInfo.processInfo.environment)
    }

    /// ``create(label:template:)`` reading the admin URL from `environment`.
    public static func create(label: String, template: String?, environment: [String: String]) throws -> TestDatabase {
        guard let adminURL = environment[environmentVariable], !adminURL.isEmpty else {
            throw TestDatabaseError("\(environmentVariable) is not set; export it, e.g. \(environmentVariable)=postgresql://courier@127.0.0.1:54320/postgres")
        }
        let name = databaseName(label: label, suffix: String(UInt64.random(in: 0...UInt64.max), radix: 16))
        var sql = "CREATE DATABASE \"\(name)\""
        if let template {
            guard isSafeIdentifier(template) else {
                throw TestDatabaseError("template name \"\(template)\" must match [a-z0-9_]+")
            }
            sql += " TEMPLATE \"\(template)\""
        }
        try withAdmin(adminURL) { admin in try admin.simpleQuery(sql) }
        var parameters = try PostgresConnectionString.parse(adminURL).filter { $0.key != "dbname" }
        parameters.append(("dbname", name))
        return TestDatabase(url: PostgresConnectionString.render(parameters), name: name, adminURL: adminURL)
    }

    /// Creates a database, runs `body`, and drops the database whether `body` throws or not.
    public static func with<T>(label: String = #function, template: String? = nil, _ body: (TestDatabase) throws -> T) throws -> T {
        let database = try create(label: label, template: template)
        defer { try? database.drop() }
        return try body(database)
    }

    /// Async variant of ``with(label:template:_:)``.
    public static func with<T>(label: String = #function, template: String? = nil, _ body: (TestDatabase) async throws -> T) async throws -> T {
        let database = try create(label: label, template: template)
        do {
            let value = try await body(database)
            try? database.drop()
            return value
        } catch {
            try? database.drop()
            throw error
        }
    }

    /// A configuration for this database.
    public func configuration(applicationName: String? = nil) -> PostgresConfiguration {
        PostgresConfiguration(connectionString: url, applicationName: applicationName)
    }

    /// Opens a connection to this database.
    public func connect(applicationName: String? = nil) throws -> PostgresConnection {
        try PostgresConnection.connect(configuration(applicationName: applicationName))
    }

    /// Terminates the database's sessions and drops it.
    public func drop() throws {
        try TestDatabase.withAdmin(adminURL) { admin in
            try admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = \(name) and pid <> pg_backend_pid()")
            try admin.simpleQuery("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
        }
    }

    /// `ct_` + label lowercased, non-`[a-z0-9]` runs turned into `_`, cut to 30 characters,
    /// + `_` + suffix. Always a safe identifier (checked).
    static func databaseName(label: String, suffix: String) -> String {
        var cleaned = ""
        for scalar in label.lowercased().unicodeScalars {
            if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
                cleaned.unicodeScalars.append(scalar)
            } else if !cleaned.hasSuffix("_") {
                cleaned += "_"
            }
        }
        while cleaned.hasSuffix("_") { cleaned.removeLast() }
        while cleaned.hasPrefix("_") { cleaned.removeFirst() }
        let name = "ct_" + String(cleaned.prefix(30)) + "_" + suffix.filter { isSafeIdentifier(String($0)) }
        precondition(isSafeIdentifier(name))
        return name
    }

    static func isSafeIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 63 && text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
        }
    }

    private static func withAdmin<T>(_ adminURL: String, _ body: (PostgresConnection) throws -> T) throws -> T {
        let admin: PostgresConnection
        do {
            admin = try PostgresConnection.connect(PostgresConfiguration(connectionString: adminURL, applicationName: "courier-tests", statementCacheCapacity: 0))
        } catch {
            throw TestDatabaseError("cannot reach the test cluster at \(environmentVariable) (\(PostgresConnectionString.redacted(adminURL))): \(error)")
        }
        defer { admin.close() }
        return try body(admin)
    }
}

/// A test database could not be created or dropped; the message says why.
public struct TestDatabaseError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A PgBouncer in front of the test cluster, one per pool mode, started by the test
/// command (scripts/start-pgbouncer.sh) with PgBouncer's default configuration.
public enum TestPooler: String, Sendable, CaseIterable, CustomStringConvertible {
    case session, transaction
    /// Statement mode, which cannot run transactions: for the tests of the refusal.
    case statement

    /// The modes Courier works in.
    public static let working: [TestPooler] = [.session, .transaction]

    /// The environment variable holding this pooler's URL (any database name is proxied).
    public var environmentVariable: String { "COURIER_TEST_PGBOUNCER_\(rawValue.uppercased())_URL" }

    public var description: String { "PgBouncer in \(rawValue) mode" }

    /// A connection string reaching `database` through this pooler. Throws when the test
    /// command did not start it: tests that need a pooler fail, they never skip.
    public func url(for database: TestDatabase) throws -> String {
        try url(for: database, environment: ProcessInfo.processInfo.environment)
    }

    public func url(for database: TestDatabase, environment: [String: String]) throws -> String {
        guard let base = environment[environmentVariable], !base.isEmpty else {
            throw TestDatabaseError("\(environmentVariable) is not set: run the suite with scripts/test.sh, which starts PgBouncer in session, transaction and statement mode")
        }
        var parameters = try PostgresConnectionString.parse(base).filter { $0.key != "dbname" }
        parameters.append(("dbname", database.name))
        return PostgresConnectionString.render(parameters)
    }
}
