import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct EnqueueSQLTests {
    func count(_ connection: PostgresConnection) throws -> Int {
        try connection.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self)
    }

    @Test func enqueueAppliesTheContractDefaults() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try db.query("select courier.enqueue('https://Hooks.Example.com/in?x=1')").rows[0].decode(0, as: Int64.self)
            let row = try db.query("""
                select method, queue, priority, attempt, max_attempts, destination, idempotency_key, state, timeout_ms,
                       run_at <= now(), headers::text
                from courier.jobs where id = \(id)
                """).rows[0]
            #expect(try row.decode(0, as: String.self) == "POST")
            #expect(try row.decode(1, as: String.self) == "default")
            #expect(try row.decode(2, as: Int.self) == 0)
            #expect(try row.decode(3, as: Int.self) == 0)
            #expect(try row.decode(4, as: Int.self) == JobDefaults.maxAttempts)
            #expect(try row.decode(5, as: String.self) == "https://hooks.example.com:443")
            let key = try row.decode(6, as: String.self)
            #expect(UUID(uuidString: key) != nil)
            #expect(try row.decode(7, as: String.self) == "available")
            #expect(try row.decode(8, as: Int.self) == 30000)
            #expect(try row.decode(9, as: Bool.self))
            #expect(try row.decode(10, as: String.self) == "{}")
        }
    }

    @Test func explicitNullMeansNoIdempotencyKeyAndNamedParametersWork() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try db.query("""
                select courier.enqueue(url => 'http://10.0.0.1:8080/x', method => 'put', idempotency_key => null,
                    queue => 'sync', priority => -5, max_attempts => 3, timeout_ms => 500, expect_content_type => 'Application/JSON',
                    headers => '{"X-Token": "abc", "Authorization": {"secret": "PARTNER"}}')
                """).rows[0].decode(0, as: Int64.self)
            let row = try db.query("""
                select idempotency_key, method, queue, priority, max_attempts, timeout_ms, expect_content_type, destination
                from courier.jobs where id = \(id)
                """).rows[0]
            #expect(try row.decode(0, as: String?.self) == nil)
            #expect(try row.decode(1, as: String.self) == "PUT")
            #expect(try row.decode(2, as: String.self) == "sync")
            #expect(try row.decode(3, as: Int.self) == -5)
            #expect(try row.decode(4, as: Int.self) == 3)
            #expect(try row.decode(5, as: Int.self) == 500)
            #expect(try row.decode(6, as: String.self) == "application/json")
            #expect(try row.decode(7, as: String.self) == "http://10.0.0.1:8080")
        }
    }

    @Test func aRolledBackEnqueueLeavesNothingAndNotifiesNobody() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let listener = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { listener.close() }
            try listener.listen("courier_jobs")
            try db.simpleQuery("begin")
            try db.query("select courier.enqueue('https://example.com/a')")
            try db.simpleQuery("rollback")
            #expect(try count(db) == 0)
            #expect(try listener.waitForNotifications(timeout: .milliseconds(300)).isEmpty)

            try db.withTransaction { tx in
                try tx.query("select courier.enqueue(url => 'https://example.com/b', queue => 'mail')")
                #expect(try listener.waitForNotifications(timeout: .milliseconds(100)).isEmpty, "NOTIFY must wait for commit")
            }
            let notes = try listener.waitForNotifications(timeout: .seconds(5))
            #expect(notes.map(\.channel) == ["courier_jobs"])
            #expect(notes.first?.payload == "mail")
            #expect(try count(db) == 1)
        }
    }

    @Test func uniqueKeyReturnsTheWaitingJobAndIsFreedWhenItLeaves() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let first = try db.query("select courier.enqueue(url => 'https://example.com/a', unique_key => 'user-42')").rows[0].decode(0, as: Int64.self)
            let second = try db.query("select courier.enqueue(url => 'https://example.com/b', unique_key => 'user-42')").rows[0].decode(0, as: Int64.self)
            #expect(first == second)
            #expect(try count(db) == 1)
            _ = try JobsTable.cancel(ids: [first], on: db)
            let third = try db.query("select courier.enqueue(url => 'https://example.com/c', unique_key => 'user-42')").rows[0].decode(0, as: Int64.self)
            #expect(third != first)
        }
    }

    /// The race's hard case, made to happen every round: the second caller's enqueue arrives
    /// while the first one's is not committed yet, waits for it (a lock wait, seen in
    /// pg_stat_activity), and then must get the first caller's job rather than a second one.
    @Test func twoConnectionsRacingForOneUniqueKeyGetOneJob() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let connect = { try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url)) }
        let (first, second, watcher) = (try connect(), try connect(), try connect())
        defer { [first, second, watcher].forEach { $0.close() } }
        @Sendable func enqueue(_ c: PostgresConnection, _ key: String) throws -> Int64 {
            try c.query("select courier.enqueue(url => 'https://example.com/r', unique_key => \(key))").rows[0].decode(0, as: Int64.self)
        }
        for round in 0..<20 {
            let key = "race-\(round)"
            try first.simpleQuery("begin")
            let firstID = try enqueue(first, key)
            let secondID = Task.detached { try enqueue(second, key) }
            let waits = try await eventually {
                try watcher.query("select wait_event_type = 'Lock' from pg_stat_activity where pid = \(second.backendPID)")
                    .rows.first?.decode(0, as: Bool?.self) == true
            }
            #expect(waits, "round \(round): the second enqueue waits for the first one's transaction")
            try first.simpleQuery("commit")
            #expect(try await secondID.value == firstID, "round \(round): both callers must get the same job")
        }
        #expect(try count(watcher) == 20)
    }

    @Test(arguments: [
        ("url => null", "url"),
        ("url => 'ftp://example.com/x'", "url"),
        ("url => 'https:///nohost'", "url"),
        ("url => 'https://example.com', method => 'GE T'", "method"),
        ("url => 'https://example.com', headers => '[1,2]'", "headers"),
        ("url => 'https://example.com', headers => '{\"Bad Name\": \"x\"}'", "headers"),
        ("url => 'https://example.com', headers => '{\"X-A\": 5}'", "headers"),
        ("url => 'https://example.com', queue => 'has space'", "queue"),
        ("url => 'https://example.com', queue => ''", "queue"),
        ("url => 'https://example.com', priority => 40000", "priority"),
        ("url => 'https://example.com', max_attempts => 0", "max_attempts"),
        ("url => 'https://example.com', deadline => now() - interval '1 minute'", "deadline"),
        ("url => 'https://example.com', idempotency_key => ''", "idempotency_key"),
        ("url => 'https://example.com', unique_key => ''", "unique_key"),
        ("url => 'https://example.com', timeout_ms => 0", "timeout_ms"),
        ("url => 'https://example.com', expect_content_type => 'json'", "expect_content_type"),
    ])
    func badInputNamesTheParameterAndChangesNothing(arguments: String, field: String) throws {
        try CourierTestDatabase.with(label: "bad_\(field)") { (_, db) throws in
            try db.query("select courier.enqueue('https://example.com/keep')")
            do {
                try db.query(PostgresQuery(unsafeSQL: "select courier.enqueue(\(arguments))"))
                Issue.record("expected an error for \(arguments)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "22023")
                #expect(error.message.contains(field), "message '\(error.message)' should name \(field)")
            }
            #expect(try count(db) == 1)
        }
    }

    @Test func checkConstraintsGuardDirectInserts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            do {
                try db.query("insert into courier.jobs (destination, url, queue) values ('x', 'https://e.com', 'bad queue')")
                Issue.record("expected a check violation")
            } catch let error as PostgresError {
                #expect(error.sqlState == "23514")
                #expect(error.constraintName == "jobs_queue_check")
            }
        }
    }

    @Test func enqueueJobTakesOtherKinds() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let id = try db.query("select courier.enqueue_job('email.send', '{\"to\": \"a@b.c\"}')").rows[0].decode(0, as: Int64.self)
            let row = try db.query("select kind, destination, url, args::text from courier.jobs where id = \(id)").rows[0]
            #expect(try row.decode(0, as: String.self) == "email.send")
            #expect(try row.decode(1, as: String.self) == "job:email.send")
            #expect(try row.decode(2, as: String?.self) == nil)
            #expect(try row.decode(3, as: String.self).contains("a@b.c"))
            #expect(throws: PostgresError.self) { try db.query("select courier.enqueue_job('http')") }
        }
    }
}
