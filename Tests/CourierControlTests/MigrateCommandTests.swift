import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl migrate` on an empty database, again, concurrently, and `--print`.
@Suite("jobctl migrate")
struct MigrateCommandTests {
    @Test func migrateThenAgainSaysUpToDate() throws {
        try TestDatabase.with { database throws in
            let first = jobctl(["migrate"], databaseURL: database.url)
            #expect(first.status == 0, "\(first)")
            for migration in Migration.all {
                #expect(first.out.contains("applied \(migration.name)"), "\(first.out)")
            }
            let second = jobctl(["migrate"], databaseURL: database.url)
            #expect(second.status == 0, "\(second)")
            #expect(second.out == "schema is up to date (\(Migration.all.count) migrations)\n")
            let json = jobctl(["migrate", "--json"], databaseURL: database.url)
            #expect((try json.object()["applied"] as? [String]) == [])

            let db = try database.connect()
            defer { db.close() }
            #expect(try Migrator.appliedVersions(db) == Migration.all.map(\.version))
            // The schema works: an enqueue through it succeeds.
            #expect(jobctl(["enqueue", "--url", "http://example.com/x"], databaseURL: database.url).status == 0)
        }
    }

    @Test func aSchemaNewerThanThisJobctlIsPointedOut() throws {
        try TestDatabase.with { database throws in
            #expect(jobctl(["migrate"], databaseURL: database.url).status == 0)
            let db = try database.connect()
            defer { db.close() }
            let future = (Migration.all.last?.version ?? 0) + 1
            try db.query("insert into courier.schema_migrations (version, name) values (\(future), 'from_a_newer_release.sql')")
            let again = jobctl(["migrate"], databaseURL: database.url)
            #expect(again.status == 0, "\(again)")
            #expect(again.err.contains("note: the database has migrations this jobctl does not know (\(future))"), "\(again.err)")
        }
    }

    @Test func anEditedMigrationStopsMigrateWithExit1() throws {
        try TestDatabase.with { database throws in
            #expect(jobctl(["migrate"], databaseURL: database.url).status == 0)
            let db = try database.connect()
            defer { db.close() }
            let first = try #require(Migration.all.first)
            try db.query("update courier.schema_migrations set checksum = 'edited' where version = \(first.version)")
            let result = jobctl(["migrate"], databaseURL: database.url)
            #expect(result.status == 1, "\(result)")
            #expect(result.err.contains("migration \(first.name) differs from the one this database applied"), "\(result.err)")
        }
    }

    @Test func migrateJSONListsWhatWasApplied() throws {
        try TestDatabase.with { database throws in
            let result = jobctl(["migrate", "--json"], databaseURL: database.url)
            #expect(result.status == 0, "\(result)")
            #expect((try result.object()["applied"] as? [String]) == Migration.all.map(\.name))
        }
    }

    @Test func severalMigratesAtOnceAllSucceed() throws {
        try TestDatabase.with { database throws in
            let statuses = OutputBuffer()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                statuses.append(String(jobctl(["migrate"], databaseURL: database.url).status))
            }
            #expect(statuses.value == "0000")
            let db = try database.connect()
            defer { db.close() }
            #expect(try db.query("select count(*)::bigint from courier.schema_migrations").rows[0].decode(0, as: Int.self)
                    == Migration.all.count)
        }
    }

    @Test func printShowsTheSQLWithoutApplyingIt() throws {
        try TestDatabase.with { database throws in
            let printed = jobctl(["migrate", "--print"], databaseURL: database.url)
            #expect(printed.status == 0, "\(printed)")
            #expect(printed.out.contains("-- 0001_core_schema.sql"))
            #expect(printed.out.contains("create function courier.replay_dead_letters("))
            let db = try database.connect()
            defer { db.close() }
            #expect(try Migrator.appliedVersions(db) == [], "--print changes nothing")

            #expect(jobctl(["migrate"], databaseURL: database.url).status == 0)
            let upToDate = jobctl(["migrate", "--print"], databaseURL: database.url)
            #expect(upToDate.status == 0)
            #expect(upToDate.out.hasPrefix("-- nothing to apply"), "\(upToDate.out)")
        }
    }

    @Test func printWorksWithoutADatabase() {
        let result = jobctl(["migrate", "--print"], databaseURL: unreachableDatabaseURL)
        #expect(result.status == 0, "\(result)")
        for migration in Migration.all {
            #expect(result.out.contains("-- \(migration.name)"))
        }
        #expect(result.err.contains("not reachable"), "\(result.err)")
    }

    @Test func anUnmigratedDatabaseSaysToMigrate() throws {
        try TestDatabase.with { database throws in
            let result = jobctl(["enqueue", "--url", "http://example.com/x"], databaseURL: database.url)
            #expect(result.status == 1, "\(result)")
            #expect(result.err.contains("run 'jobctl migrate'"), "\(result.err)")
            #expect(jobctl(["dead", "list"], databaseURL: database.url).err.contains("run 'jobctl migrate'"))
        }
    }

    @Test func migrateWithoutADatabaseExits1() {
        let result = jobctl(["migrate"], databaseURL: unreachableDatabaseURL)
        #expect(result.status == 1, "\(result)")
        #expect(result.err.contains("cannot connect"))
    }
}
