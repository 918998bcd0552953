import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The roles of `sql/0006_roles.sql`, exercised through login roles that are granted
/// them, as a deployer would. Roles belong to the whole cluster: each test makes its
/// own uniquely named login roles and drops them afterwards.
@Suite struct RoleGrantTests {
    /// A login role that is a member of one Courier group role, on one test database.
    struct Login {
        let name: String
        let url: String
        let adminURL: String

        static func create(memberOf group: String, database: TestDatabase) throws -> Login {
            let name = "ct_login_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let admin = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.adminURL))
            defer { admin.close() }
            try admin.simpleQuery("create role \(name) login; grant \(group) to \(name)")
            var parameters = try PostgresConnectionString.parse(database.url).filter { $0.key != "user" }
            parameters.append(("user", name))
            return Login(name: name, url: PostgresConnectionString.render(parameters), adminURL: database.adminURL)
        }

        func connect() throws -> PostgresConnection {
            try PostgresConnection.connect(PostgresConfiguration(connectionString: url, statementCacheCapacity: 0))
        }

        func drop() {
            guard let admin = try? PostgresConnection.connect(PostgresConfiguration(connectionString: adminURL)) else { return }
            defer { admin.close() }
            _ = try? admin.query("select pg_terminate_backend(pid) from pg_stat_activity where usename = \(name)")
            try? admin.simpleQuery("drop role if exists \(name)")
        }
    }

    @Test func theGroupRolesExistWithoutLogin() throws {
        try CourierTestDatabase.with { _, connection in
            let rows = try connection.query("""
                select rolname, rolcanlogin from pg_roles
                where rolname in ('courier_enqueue', 'courier_worker', 'courier_admin') order by rolname
                """).rows
            #expect(try rows.map { try $0.decode(0, as: String.self) } == ["courier_admin", "courier_enqueue", "courier_worker"])
            #expect(try rows.allSatisfy { try $0.decode(1, as: Bool.self) == false })
            // The enqueue functions run as their owner with a fixed search_path.
            let functions = try connection.query("""
                select proname, prosecdef, array_to_string(proconfig, ',') from pg_proc
                where pronamespace = 'courier'::regnamespace and proname in ('enqueue', 'enqueue_job')
                """).rows
            #expect(functions.count == 2)
            for row in functions {
                #expect(try row.decode(1, as: Bool.self))
                #expect(try row.decode(2, as: String?.self) == "search_path=pg_catalog, pg_temp")
            }
            // And PUBLIC may execute no Courier function.
            let open = try connection.query("""
                select count(*)::bigint from pg_proc
                where pronamespace = 'courier'::regnamespace and has_function_privilege('public', oid, 'execute')
                """).rows[0].decode(0, as: Int.self)
            #expect(open == 0)
        }
    }

    @Test func theEnqueueRoleMayOnlyEnqueue() throws {
        try CourierTestDatabase.with { database, admin in
            let login = try Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }

            let id = try connection.query("select courier.enqueue('https://e.com')").rows[0].decode(0, as: Int64.self)
            #expect(id > 0)
            let named = try connection.query("""
                select courier.enqueue(url => 'https://e.com/hook', method => 'PUT', queue => 'roles',
                                       headers => '{"Authorization": {"secret": "partner"}}', unique_key => 'u-1')
                """).rows[0].decode(0, as: Int64.self)
            // The unique-key path reads courier.jobs inside the function: still allowed.
            let again = try connection.query("select courier.enqueue(url => 'https://e.com/hook', unique_key => 'u-1')")
                .rows[0].decode(0, as: Int64.self)
            #expect(again == named)
            let custom = try connection.query("select courier.enqueue_job('report.build', '{\"day\": 1}')").rows[0].decode(0, as: Int64.self)
            #expect(custom > named)
            // A signed job (0008 replaced courier.enqueue: still definer's rights, still granted).
            let signed = try connection.query("select courier.enqueue(url => 'https://e.com/signed', signing_secret => 'HOOKS')")
                .rows[0].decode(0, as: Int64.self)
            #expect(try admin.query("select signing_secret from courier.jobs where id = \(signed)").rows[0].decode(0, as: String?.self) == "HOOKS")
            try admin.query("delete from courier.jobs where id = \(signed)")
            // Enqueue inside the caller's own transaction still works.
            try connection.withTransaction { tx in
                _ = try tx.query("select courier.enqueue('https://e.com/tx')")
            }
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 4)
            // Bad input is still refused with the function's own error.
            #expect(sqlState { _ = try connection.query("select courier.enqueue('ftp://e.com')") } == "22023")

            let denied: [String] = [
                "select * from courier.jobs",
                "select count(*) from courier.jobs",
                "delete from courier.jobs",
                "update courier.jobs set priority = 1",
                "insert into courier.jobs (destination) values ('x')",
                "truncate courier.jobs",
                "select * from courier.dead_letters",
                "select * from courier.completed_jobs",
                "select * from courier.breakers",
                "select courier.replay_dead_letters()",
                "select courier.breaker_force('https://e.com:443', 'open')",
                "select courier.destination_of('https://e.com')",
                // 0010: not the breaker functions, not the header check, no table at all.
                "select courier.breaker_pause('https://e.com:443', 1000)",
                "select courier.breaker_report('https://e.com:443', 0, 9, 9, 'w', 1, 60000, 1, 0.5, 1000)",
                "select courier.check_headers('{}')",
                "select * from courier.breaker_events",
                "select * from courier.workers",
                "select * from courier.queue_settings",
            ]
            for statement in denied {
                #expect(sqlState { _ = try connection.query(PostgresQuery(unsafeSQL: statement)) } == "42501", "\(statement) must be refused")
            }
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 4,
                    "nothing was deleted")
        }
    }

    @Test func theWorkerRoleRunsTheQueueButNotOperatorActions() throws {
        try CourierTestDatabase.with { database, admin in
            _ = try JobsTable.enqueue(EnqueueRequest(url: "https://e.com/a"), on: admin)
            let login = try Login.create(memberOf: "courier_worker", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }
            let worker = UUID()
            try WorkersTable.register(.init(id: worker, host: "h", pid: 1, queues: ["default"], concurrency: 1, version: "t",
                                            heartbeatIntervalMilliseconds: 1000), on: connection)
            let jobs = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 30_000, on: connection)
            #expect(jobs.count == 1)
            #expect(try JobsTable.renewLeases(jobs.map { ($0.id, $0.lease) }, worker: worker, leaseMilliseconds: 30_000,
                                              on: connection).renewed.count == 1)
            _ = try BreakersTable.pruneEvents(olderThanMilliseconds: 1000, on: connection)
            _ = try JobsTable.rescueExpired(on: connection)
            _ = try QueueSettingsTable.all(on: connection)
            _ = try DestinationsTable.all(on: connection)
            _ = try StatsQueries.queueDepths(on: connection)
            _ = try StatsQueries.deadLetterCounts(on: connection)
            _ = try StatsQueries.breakerStates(on: connection)
            _ = try JobsTable.pruneCompleted(olderThanMilliseconds: 1000, on: connection)
            _ = try DeadLettersTable.purge(olderThanMilliseconds: 86_400_000, on: connection)
            try WorkersTable.deregister(id: worker, on: connection)

            let denied: [String] = [
                "select courier.replay_dead_letters()",
                "select courier.breaker_force('https://e.com:443', 'open')",
                "insert into courier.queue_settings (queue) values ('q')",
                "insert into courier.destinations (destination) values ('d')",
                "select * from courier.destination_set('d', 'HOOKS')",
                "select courier.destination_reset('d')",
                "truncate courier.jobs",
                "create table courier.mine (x int)",
                // 0010: a worker changes breakers only through the breaker functions, so it
                // cannot force, close or rewrite one (breaker_force is the operators').
                "update courier.breakers set state = 'closed', forced = false",
                "insert into courier.breakers (destination, state, forced) values ('https://x.com:443', 'open', true)",
                "delete from courier.breakers",
                "insert into courier.breaker_events (destination, from_state, to_state, reason, generation) values ('d', 'open', 'closed', 'forged', 0)",
                "delete from courier.breaker_events",
            ]
            for statement in denied {
                #expect(sqlState { _ = try connection.query(PostgresQuery(unsafeSQL: statement)) } == "42501", "\(statement) must be refused")
            }
        }
    }

    /// 0010: what a worker may still do with breakers, through the functions only.
    @Test func theWorkerRoleChangesBreakersOnlyThroughTheFunctions() throws {
        try CourierTestDatabase.with { (database, admin) throws in
            let login = try Login.create(memberOf: "courier_worker", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }
            try BreakersTable.pause(destination: "https://e.com:443", milliseconds: 5000, on: connection)
            #expect(try admin.query("select not_before > now() from courier.breakers where destination = 'https://e.com:443'")
                .rows[0].decode(0, as: Bool.self))
            let state = try connection.query("""
                select courier.breaker_report('https://f.com:443', 0, 3, 3, 'w', 3, 60000, 20, 0.5, 1000)
                """).rows[0].decode(0, as: String.self)
            #expect(state == "open", "evidence still opens a breaker")
            #expect(try connection.query("select count(*)::bigint from courier.breaker_events").rows[0].decode(0, as: Int.self) == 1,
                    "and the worker may read the events")
            // Every breaker function runs as its owner with a fixed search_path.
            let loose = try admin.query("""
                select count(*)::bigint from pg_proc where pronamespace = 'courier'::regnamespace and proname like 'breaker\\_%'
                  and not (prosecdef and array_to_string(proconfig, ',') = 'search_path=pg_catalog, pg_temp')
                """).rows[0].decode(0, as: Int.self)
            #expect(loose == 0)
        }
    }

    @Test func theAdminRoleCanDoWhatJobctlDoes() throws {
        try CourierTestDatabase.with { database, admin in
            let id = try JobsTable.enqueue(EnqueueRequest(url: "https://e.com/a"), on: admin)
            let login = try Login.create(memberOf: "courier_admin", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }
            #expect(try JobsTable.get(id: id, on: connection) != nil)
            #expect(try JobsTable.cancel(ids: [id], on: connection).first?.outcome == .cancelled)
            #expect(try DeadLettersTable.list(.init(), on: connection).count == 1)
            #expect(try BreakersTable.force(destination: "https://e.com:443", action: .open, on: connection) == "closed", "the state it left")
            _ = try connection.query("select courier.replay_dead_letters()")
            try QueueSettingsTable.upsert(.init(queue: "default"), on: connection)
            #expect(try connection.execute("delete from courier.queue_settings") == 1)
        }
    }
}
