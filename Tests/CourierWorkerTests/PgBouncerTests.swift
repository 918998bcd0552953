import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Courier through a real PgBouncer (Debian's package, default configuration), in
/// session and in transaction mode: the connection's session settings, migrate, jobctl
/// and a jobworker process all go through the pooler. scripts/test.sh starts both.
@Suite(.serialized) struct PgBouncerTests {
    /// Issue 43: the test poolers trusted every client on 127.0.0.1, so any local user could
    /// reach the cluster as its superuser through them while a suite ran. They now ask for
    /// the cluster's generated password; as the attack, connect without it and with a guess.
    @Test(arguments: TestPooler.allCases)
    func aPoolerRefusesClientsWithoutThePassword(pooler: TestPooler) throws {
        try TestDatabase.with(label: "pgb_auth_\(pooler.rawValue)") { database in
            let url = try pooler.url(for: database)
            let parameters = try PostgresConnectionString.parse(url).filter { $0.key != "password" }
            #expect(parameters.count < (try PostgresConnectionString.parse(url)).count, "the suite's URL carries the password")
            for attempt in [[("passfile", "/nonexistent")], [("password", "guess"), ("passfile", "/nonexistent")]] {
                let text = PostgresConnectionString.render(parameters + attempt + [("connect_timeout", "10")])
                #expect(throws: (any Error).self, "\(pooler) let in a client with \(attempt)") {
                    try PostgresConnection.connect(PostgresConfiguration(connectionString: text)).close()
                }
            }
            if TestPooler.working.contains(pooler) {
                try PostgresConnection.connect(PostgresConfiguration(connectionString: url)).close()  // the suite's URL gets in
            }
        }
    }

    /// Every session setting the decoders could depend on is set to the least friendly
    /// value as the database default, so every fresh server connection PgBouncer opens
    /// starts with them.
    @Test(arguments: TestPooler.working)
    func valuesDecodeWhateverTheDatabaseDefaultsAre(pooler: TestPooler) throws {
        try TestDatabase.with(label: "pgb_decode_\(pooler.rawValue)") { database in
            let admin = try database.connect()
            try admin.simpleQuery("""
                ALTER DATABASE "\(database.name)" SET DateStyle = 'SQL, DMY';
                ALTER DATABASE "\(database.name)" SET TimeZone = 'Asia/Kolkata';
                ALTER DATABASE "\(database.name)" SET bytea_output = 'escape';
                """)
            admin.close()
            let url = try pooler.url(for: database)
            let expected = try PostgresTimestamp.parse("2026-03-04 05:06:07.123456+00")
            let bytes = Data([0, 255, 92, 65, 10])
            // Three clients at once, two inside transactions: PgBouncer must lend several
            // server connections, not only the one a client's SETs first ran on.
            let clients = try (0..<3).map { _ in try PostgresConnection.connect(PostgresConfiguration(connectionString: url)) }
            defer { clients.forEach { $0.close() } }
            for client in clients { #expect(client.isPooled, "a session through \(pooler) is recognised as pooled") }
            try clients[0].simpleQuery("BEGIN")
            try clients[1].simpleQuery("BEGIN")
            var pids: Set<Int> = []
            for client in clients {
                let row = try client.query("""
                    select timestamptz '2026-03-04 05:06:07.123456+00', date '2026-03-04', \(bytes), pg_backend_pid()
                    """).rows[0]
                #expect(try row.decode(0, as: Date.self) == expected)
                #expect(try row.decode(1, as: Date.self) == (try PostgresTimestamp.parse("2026-03-04")))
                #expect(try row.decode(2, as: Data.self) == bytes)
                pids.insert(try row.decode(3, as: Int.self))
            }
            #expect(pids.count >= 2, "the clients held different server connections")
            try clients[0].simpleQuery("COMMIT")
            try clients[1].simpleQuery("COMMIT")

            // The same database reached directly: not pooled, the statement cache in use.
            let direct = try database.connect()
            defer { direct.close() }
            #expect(!direct.isPooled)
            #expect(try direct.query("select timestamptz '2026-03-04 05:06:07.123456+00'").rows[0].decode(0, as: Date.self) == expected)
            #expect(try direct.query("select \(bytes)").rows[0].decode(0, as: Data.self) == bytes)
        }
    }

    /// The regression of issue 17: a second migrate through a transaction-mode pooler
    /// failed with `prepared statement "courier_stmt_1" already exists`.
    @Test(arguments: TestPooler.working)
    func migrateRunsRepeatedlyThroughThePooler(pooler: TestPooler) throws {
        try TestDatabase.with(label: "pgb_migrate_\(pooler.rawValue)") { database in
            let url = try pooler.url(for: database)
            for round in 1...3 {
                let (status, output) = try SpawnedProcess.run("jobctl", ["migrate", "--database-url", url])
                #expect(status == 0, "migrate #\(round) through \(pooler): \(output)")
            }
            let direct = try database.connect()
            defer { direct.close() }
            #expect(try Migrator.appliedVersions(direct) == Migration.all.map(\.version))
        }
    }

    /// Enqueue, the worker, cancel, replay and breakers, everything through the pooler;
    /// the worker, finding itself pooled and given no listen URL, polls.
    @Test(arguments: TestPooler.working)
    func theWholeJobLifecycleRunsThroughThePooler(pooler: TestPooler) async throws {
        let database = try CourierTestDatabase.create(label: "pgb_life_\(pooler.rawValue)")
        defer { try? database.drop() }
        let direct = try database.connect()
        defer { direct.close() }
        let url = try pooler.url(for: database)
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.slow(delay: .seconds(60), then: .json200), forPath: "/slow")
        server.setBehavior(.respond(status: 500, headers: [], body: "down"), forPath: "/down")

        func jobctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
            try SpawnedProcess.run("jobctl", arguments + ["--database-url", url])
        }
        func enqueue(_ path: String, _ extra: [String] = []) throws -> Int64 {
            let (status, output) = try jobctl(["enqueue", "--url", server.baseURL + path] + extra)
            #expect(status == 0, "enqueue: \(output)")
            return try #require(Int64(output.trimmingCharacters(in: .whitespacesAndNewlines)), "enqueue printed \(output)")
        }
        func count(_ sql: PostgresQuery) throws -> Int { try direct.query(sql).rows[0].decode(0, as: Int.self) }

        let worker = try SpawnedProcess("jobworker", [
            "--database-url", url, "--allow-private-networks", "--concurrency", "4", "--lease", "3s",
            "--poll-interval", "200ms", "--backoff-base", "100ms", "--backoff-cap", "200ms", "--jitter", "none",
            "--breaker-failures", "3", "--breaker-cooldown", "1h", "--breaker-cooldown-max", "1h", "--log-level", "debug",
        ])
        defer { worker.cleanUp() }

        // Delivery.
        let ok = try enqueue("/ok")
        #expect(try await eventually { try count("select count(*)::int from courier.completed_jobs where id = \(ok)") == 1 },
                "the job succeeds through \(pooler): \(worker.output)")

        // Cancel a running job: the worker learns of it at a heartbeat (no LISTEN here).
        let slow = try enqueue("/slow")
        #expect(try await eventually { try count("select count(*)::int from courier.jobs where id = \(slow) and state = 'running'") == 1 })
        let cancel = try jobctl(["cancel", String(slow)])
        #expect(cancel.status == 0, "cancel: \(cancel.output)")
        #expect(try await eventually {
            try count("select count(*)::int from courier.dead_letters where job_id = \(slow) and reason = 'cancelled'") == 1
        }, "the running job is cancelled: \(worker.output)")

        // Breakers: three 500s open the destination's breaker; jobctl sees and closes it.
        let down = try enqueue("/down", ["--max-attempts", "10"])
        let destination = server.baseURL
        #expect(try await eventually {
            try count("select count(*)::int from courier.breakers where destination = \(destination) and state = 'open'") == 1
        }, "the breaker opens: \(worker.output)")
        let breakers = try jobctl(["breakers", "--json"])
        #expect(breakers.status == 0 && breakers.output.contains("\"open\""), "breakers: \(breakers.output)")
        #expect(try jobctl(["breaker", "close", destination]).status == 0)
        #expect(try count("select count(*)::int from courier.breakers where destination = \(destination) and state = 'closed'") == 1)
        #expect(try jobctl(["cancel", String(down)]).status == 0)

        // Replay the cancelled slow job after making its path answer at once.
        server.setBehavior(.json200, forPath: "/slow")
        let replay = try jobctl(["dead", "replay", "--reason", "cancelled"])
        #expect(replay.status == 0, "replay: \(replay.output)")
        #expect(try await eventually { try count("select count(*)::int from courier.completed_jobs where url like '%/slow'") == 1 },
                "the replayed job succeeds: \(worker.output)")

        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(20)) == 0)
        let log = worker.output
        #expect(log.contains("connection pooler"), "the worker says it polls behind a pooler: \(log)")
        #expect(!log.contains("already exists") && !log.contains("does not exist"), "no statement-name collisions: \(log)")
        #expect(!log.contains("database unreachable"), "the database never looked unreachable: \(log)")
    }

    /// Behind a transaction-mode pooler, `--listen-database-url` (a direct connection)
    /// brings NOTIFY back: with polling set to an hour, only a notification can wake the
    /// worker for the new job.
    @Test func aDirectListenConnectionWakesAWorkerBehindATransactionPooler() async throws {
        let database = try CourierTestDatabase.create(label: "pgb_listen")
        defer { try? database.drop() }
        let direct = try database.connect()
        defer { direct.close() }
        let url = try TestPooler.transaction.url(for: database)
        let server = try FaultServer()
        defer { server.stop() }
        let worker = try SpawnedProcess("jobworker", [
            "--database-url", url, "--listen-database-url", database.url, "--allow-private-networks",
            "--poll-interval", "1h", "--log-level", "debug",
        ])
        defer { worker.cleanUp() }
        // The worker is listening once it has registered and its listen connection has sent
        // LISTEN (pg_stat_activity shows that backend's last statement); a job enqueued before
        // that would be found by the first claim anyway.
        #expect(try await eventually { try direct.query("select count(*)::int from courier.workers").rows[0].decode(0, as: Int.self) == 1 })
        #expect(try await eventually {
            try direct.query("""
                select count(*)::int from pg_stat_activity where application_name = 'jobworker-listen' and query ilike 'listen %'
                """).rows[0].decode(0, as: Int.self) >= 1
        }, "the worker's listen connection sent LISTEN")
        let (status, output) = try SpawnedProcess.run("jobctl", ["enqueue", "--url", server.baseURL + "/hello", "--database-url", url])
        #expect(status == 0, "enqueue: \(output)")
        #expect(try await eventually { server.requestCount(path: "/hello") >= 1 }, "NOTIFY woke the worker: \(worker.output)")
        worker.signal(SIGTERM)
        #expect(await worker.waitForExit(timeout: .seconds(20)) == 0)
        #expect(!worker.output.contains("polling every"), "the worker listened instead of polling: \(worker.output)")
    }

    /// Statement mode allows no transaction: migrate and the worker stop with a message
    /// naming the pool mode instead of retrying for ever.
    @Test func statementModeIsRefusedByName() async throws {
        let database = try CourierTestDatabase.create(label: "pgb_statement")
        defer { try? database.drop() }
        let url = try TestPooler.statement.url(for: database)
        let (status, output) = try SpawnedProcess.run("jobctl", ["migrate", "--database-url", url])
        #expect(status == 1, "migrate: \(output)")
        #expect(output.contains("statement pool mode") && output.contains("pool_mode = transaction"), "migrate: \(output)")
        let worker = try SpawnedProcess("jobworker", ["--database-url", url, "--poll-interval", "100ms"])
        defer { worker.cleanUp() }
        #expect(await worker.waitForExit(timeout: .seconds(60)) == 1, "the worker stops by itself: \(worker.output)")
        #expect(worker.output.contains("statement pool mode"), "\(worker.output)")
    }
}
