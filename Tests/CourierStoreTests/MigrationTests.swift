import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct MigrationTests {
    static let sqlDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("sql")

    @Test func theBinaryCarriesEveryFileInSqlInOrder() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sqlDirectory.path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        #expect(Migration.all.map(\.name) == files)
        // Each version is its file's number, strictly increasing (numbers are reserved per change, so
        // one may land before a lower one).
        #expect(Migration.all.map(\.version) == files.map { Int($0.prefix(4))! })
        #expect(Migration.all.map(\.version) == Migration.all.map(\.version).sorted() && Set(Migration.all.map(\.version)).count == files.count)
        for migration in Migration.all {
            let text = try String(contentsOf: Self.sqlDirectory.appendingPathComponent(migration.name), encoding: .utf8)
            #expect(migration.sql == text, "embedded \(migration.name) differs from the file")
        }
    }

    @Test func migrateIsRepeatableAndRecordsVersions() throws {
        let database = try TestDatabase.create()
        defer { try? database.drop() }
        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { connection.close() }
        #expect(try Migrator.appliedVersions(connection).isEmpty)
        let first = try Migrator.migrate(connection)
        #expect(first.count == Migration.all.count)
        let second = try Migrator.migrate(connection)
        #expect(second.isEmpty)
        #expect(try Migrator.appliedVersions(connection) == Migration.all.map(\.version))
    }

    @Test func checksumsAreRecordedBackfilledAndAnEditedMigrationIsRefused() throws {
        let database = try TestDatabase.create()
        defer { try? database.drop() }
        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { connection.close() }
        try Migrator.migrate(connection)
        let first = try #require(Migration.all.first)
        func stored(_ version: Int) throws -> String? {
            try connection.query("select checksum from courier.schema_migrations where version = \(version)").rows[0].decode(0, as: String?.self)
        }
        // The checksum is the SHA-256 of the text that was applied.
        let expected = try connection.query("select encode(sha256(convert_to(\(first.sql), 'UTF8')), 'hex')").rows[0].decode(0, as: String.self)
        #expect(try stored(first.version) == expected)
        #expect(expected.count == 64)

        // A row from before checksums existed is filled in by the next migrate.
        try connection.query("update courier.schema_migrations set checksum = null where version = \(first.version)")
        #expect(try Migrator.migrate(connection).isEmpty)
        #expect(try stored(first.version) == expected)

        // A migration edited after it was applied stops migrate before it applies anything.
        try connection.query("update courier.schema_migrations set checksum = 'edited' where version = \(first.version)")
        try connection.query("delete from courier.schema_migrations where version = \(Migration.all.last!.version)")
        let error = #expect(throws: ChangedMigrationError.self) { try Migrator.migrate(connection) }
        #expect(error?.name == first.name)
        #expect(error?.description.contains("must not be edited") == true)
        #expect(try Migrator.appliedVersions(connection) == Migration.all.dropLast().map(\.version), "nothing was applied")
    }

    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let database = try TestDatabase.create()
        defer { try? database.drop() }
        let url = database.url
        let applied = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await Task.detached {
                        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: url))
                        defer { connection.close() }
                        return try Migrator.migrate(connection).count
                    }.value
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(applied == Migration.all.count)
        let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: url))
        defer { connection.close() }
        let rows = try connection.query("select count(*)::bigint, count(distinct version)::bigint from courier.schema_migrations").rows
        #expect(try rows[0].decode(0, as: Int.self) == Migration.all.count)
        #expect(try rows[0].decode(1, as: Int.self) == Migration.all.count)
    }

    @Test func printedScriptContainsEveryMigration() {
        let script = Migrator.script()
        for migration in Migration.all {
            #expect(script.contains("-- \(migration.name)"))
        }
        #expect(script.contains("create function courier.enqueue("))
    }
}
