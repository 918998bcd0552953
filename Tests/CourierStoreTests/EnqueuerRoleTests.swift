import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 18, item 12: what an enqueuer (`courier_enqueue`) may do, beyond RoleGrantTests.
@Suite struct EnqueuerRoleTests {
    /// The attack: file failing jobs under a partner's breaker key to open it.
    @Test func anEnqueuerCannotFileJobsUnderAnotherDestinationsBreaker() throws {
        try CourierTestDatabase.with { database, admin in
            let login = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }

            #expect(sqlState {
                _ = try connection.query("select courier.enqueue(url => 'https://attacker.example/fail', destination => 'https://partner.example.com:443')")
            } == "42501")
            #expect(sqlState {
                _ = try connection.query("select courier.enqueue(url => 'https://attacker.example/fail', destination => 'partner-billing')")
            } == "42501", "nor a label of the operators' choosing")
            #expect(sqlState {
                _ = try connection.query("select courier.enqueue_job('report.build', '{}', destination => 'https://partner.example.com:443')")
            } == "42501")
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0, "nothing was filed")

            // Its own destination, spelled out, is fine; a sub-key of it once an operator declared it.
            _ = try admin.query("select courier.destination_set('https://partner.example.com:443/billing')")
            _ = try admin.query("select courier.destination_set('job:report.build/eu')")
            for destination in ["https://partner.example.com:443", "https://partner.example.com:443/billing"] {
                _ = try connection.query("select courier.enqueue(url => 'https://partner.example.com/hook', destination => \(destination))")
            }
            _ = try connection.query("select courier.enqueue_job('report.build', '{}', destination => 'job:report.build/eu')")
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 3)

            // Operators (and workers) still name any label.
            _ = try admin.query("select courier.enqueue(url => 'https://a.example/x', destination => 'partner-billing')")
            let worker = try RoleGrantTests.Login.create(memberOf: "courier_worker", database: database)
            defer { worker.drop() }
            let workerConnection = try worker.connect()
            defer { workerConnection.close() }
            _ = try workerConnection.query("select courier.enqueue(url => 'https://a.example/y', destination => 'partner-billing')")
            #expect(try admin.query("select count(*)::bigint from courier.jobs where destination = 'partner-billing'").rows[0].decode(0, as: Int.self) == 2)
        }
    }

    /// The owner of `courier.jobs` (who ran the migrations; on a managed database not a
    /// superuser) is an operator: the destination check lets it name any label even when
    /// it is neither a worker nor an admin, while an enqueuer still may not.
    @Test func theJobsTablesOwnerMayNameAnyDestinationWithoutBeingAWorkerOrAdmin() throws {
        try CourierTestDatabase.with { database, admin in
            let owner = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { owner.drop() }
            let isSuperuser = try admin.query("select rolsuper from pg_roles where rolname = \(owner.name)").rows[0].decode(0, as: Bool.self)
            #expect(!isSuperuser)
            try admin.simpleQuery("alter table courier.jobs owner to \(owner.name)")
            defer { try? admin.simpleQuery("alter table courier.jobs owner to current_user") }
            let connection = try owner.connect()
            defer { connection.close() }
            _ = try connection.query("select courier.enqueue(url => 'https://a.example/x', destination => 'partner-billing')")

            let enqueuer = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { enqueuer.drop() }
            let other = try enqueuer.connect()
            defer { other.close() }
            #expect(sqlState {
                _ = try other.query("select courier.enqueue(url => 'https://a.example/x', destination => 'partner-billing')")
            } == "42501", "an enqueuer that does not own the table is still refused")
            #expect(try admin.query("select count(*)::bigint from courier.jobs where destination = 'partner-billing'").rows[0].decode(0, as: Int.self) == 1)
        }
    }

    /// The attack: probe for another caller's work by enqueuing with its unique_key and
    /// watching whether a new id comes back (and whose). Keys are unique per enqueuing
    /// role (sql/0021): another role's key neither matches, nor blocks, nor reveals.
    @Test func aUniqueKeyOfOneRoleNeitherMatchesNorRevealsAnothersJob() throws {
        try CourierTestDatabase.with { database, admin in
            let alice = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { alice.drop() }
            let mallory = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { mallory.drop() }
            let a = try alice.connect()
            defer { a.close() }
            let m = try mallory.connect()
            defer { m.close() }
            func enqueue(_ connection: PostgresConnection, key: String) throws -> Int64 {
                try connection.query("select courier.enqueue(url => 'https://shop.example.com/hook', unique_key => \(key))")
                    .rows[0].decode(0, as: Int64.self)
            }
            let alices = try enqueue(a, key: "order-42")
            let mallorys = try enqueue(m, key: "order-42")
            #expect(mallorys != alices, "another role's key must not hand back its job's id")
            #expect(try enqueue(a, key: "order-42") == alices, "a role's own key still deduplicates")
            #expect(try enqueue(m, key: "order-42") == mallorys)
            // The same for handler jobs.
            let job = try a.query("select courier.enqueue_job('report.build', unique_key => 'r-1')").rows[0].decode(0, as: Int64.self)
            #expect(try m.query("select courier.enqueue_job('report.build', unique_key => 'r-1')").rows[0].decode(0, as: Int64.self) != job)
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 4)
            let scopes = try admin.query("select distinct unique_scope from courier.jobs order by 1").rows.map { try $0.decode(0, as: String.self) }
            #expect(scopes == [alice.name, mallory.name].sorted())

            // The trusted COPY path scopes by its role too, and deduplicates within it.
            var requests = [EnqueueRequest(url: "https://shop.example.com/hook"), EnqueueRequest(url: "https://shop.example.com/hook")]
            requests[0].uniqueKey = "order-42"
            requests[1].uniqueKey = "order-42"
            let result = try JobsTable.enqueueMany(requests, on: admin)
            #expect(result.inserted == 1 && result.skippedByUniqueKey == 1)
            #expect(try JobsTable.enqueueMany([requests[0]], on: admin).inserted == 0)
            #expect(try enqueue(a, key: "order-42") == alices)
        }
    }

    /// `jobctl enqueue --ndjson` with only the enqueuer role: the bulk path falls back to
    /// `courier.enqueue` per line, still all or nothing.
    @Test func anEnqueuerCanBulkEnqueue() throws {
        try CourierTestDatabase.with { database, admin in
            let login = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let connection = try login.connect()
            defer { connection.close() }
            var requests = (0..<5).map { EnqueueRequest(url: "https://e.com/\($0)") }
            requests[1].uniqueKey = "u"
            requests[3].uniqueKey = "u"
            let result = try JobsTable.enqueueMany(requests, on: connection)
            #expect(result.inserted == 4)
            #expect(result.skippedByUniqueKey == 1)
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 4)

            // All or nothing: a bad line leaves nothing behind.
            var bad = [EnqueueRequest(url: "https://e.com/ok"), EnqueueRequest(url: "https://e.com/bad")]
            bad[1].destination = "https://other.example:443"
            #expect(sqlState { _ = try JobsTable.enqueueMany(bad, on: connection) } == "42501")
            #expect(try admin.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 4)
        }
    }
}

/// The throttling rule's write: a retry that uses no attempt gives the claim's increment
/// back, fenced as every retry is.
@Suite struct ThrottledRetryTests {
    @Test func aRetryThatUsesNoAttemptGivesItBack() throws {
        try CourierTestDatabase.with { _, db in
            let id = try JobsTable.enqueue(EnqueueRequest(url: "https://e.com/a"), on: db)
            let worker = UUID()
            let first = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 60_000, on: db).first)
            #expect(first.attempt == 1)
            #expect(try JobsTable.retry([.init(id: id, attempt: 1, lease: first.lease, delayMilliseconds: 0, errorJSON: #"{"attempt": 1, "class": "throttled"}"#,
                                               usesAttempt: false)], worker: worker, on: db) == [id])
            #expect(try db.query("select attempt from courier.jobs where id = \(id)").rows[0].decode(0, as: Int.self) == 0)
            let second = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 60_000, on: db).first)
            #expect(second.attempt == 1, "the throttled attempt was not counted")
            #expect(try JobsTable.retry([.init(id: id, attempt: 1, lease: second.lease, delayMilliseconds: 0, errorJSON: #"{"attempt": 1, "class": "server"}"#)],
                                        worker: worker, on: db) == [id])
            #expect(try db.query("select attempt, jsonb_array_length(errors) from courier.jobs where id = \(id)").rows[0].decode(0, as: Int.self) == 1)
            // A stale write (a lease token that is not current) changes nothing.
            #expect(try JobsTable.retry([.init(id: id, attempt: 7, lease: 7, delayMilliseconds: 0, errorJSON: "{}", usesAttempt: false)],
                                        worker: worker, on: db).isEmpty)
        }
    }
}
