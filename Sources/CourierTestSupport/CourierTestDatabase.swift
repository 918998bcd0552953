import CourierStore
import Foundation
import Postgres

/// A fresh database with Courier's schema for one test. The schema is migrated
/// once per test process into a template database; each test's database is a
/// copy of it, which is much faster than migrating every time.
public enum CourierTestDatabase {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var templateName: String?

    /// Creates a migrated database; drop it with `drop()` when the test ends.
    public static func create(label: String = #function) throws -> TestDatabase {
        try lock.withLock {
            if templateName == nil {
                let template = try TestDatabase.create(label: "template_\(getpid())")
                let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: template.url))
                try Migrator.migrate(connection)
                connection.close()
                templateName = template.name
            }
            return try TestDatabase.create(label: label, template: templateName)
        }
    }

    /// Creates a migrated database, connects to it, runs `body`, and drops it.
    public static func with<T>(label: String = #function, _ body: (TestDatabase, PostgresConnection) throws -> T) throws -> T {
        let database = try create(label: label)
        defer { try? database.drop() }
        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { connection.close() }
        return try body(database, connection)
    }

    /// The async form, for tests that await.
    public static func with<T>(label: String = #function, _ body: (TestDatabase, PostgresConnection) async throws -> T) async throws -> T {
        let database = try create(label: label)
        defer { try? database.drop() }
        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { connection.close() }
        return try await body(database, connection)
    }
}
