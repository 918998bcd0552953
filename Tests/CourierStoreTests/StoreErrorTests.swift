import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The store's error codes, from what a real server answers.
@Suite struct StoreErrorTests {
    func failure(_ db: PostgresConnection, _ sql: PostgresQuery) -> StoreError? {
        do {
            _ = try db.query(sql)
            return nil
        } catch {
            return StoreError.from(error)
        }
    }

    @Test func eachKindOfFailureGetsItsCode() throws {
        try CourierTestDatabase.with { database, db in
            #expect(failure(db, "select * from courier.no_such_table")?.code == .schemaMissing)
            #expect(failure(db, "select courier.no_such_function()")?.code == .schemaMissing)
            #expect(failure(db, "select 1/0")?.code == .badInput(field: nil))
            #expect(failure(db, "select courier.enqueue(url => 'http://127.0.0.1:9/', max_attempts => 0)")?.code
                == .badInput(field: "max_attempts"))
            try db.execute("create table t (k int primary key)")
            try db.execute("insert into t values (1)")
            #expect(failure(db, "insert into t values (1)")?.code == .conflict)
            // A statement that waits, for a lock another session holds, past its timeout. Were
            // there no timeout, the server would end the idle holder after 30 s (a backstop
            // against a hang) and the statement would then succeed.
            let holder = try database.connect()
            defer { holder.close() }
            try holder.simpleQuery("set idle_session_timeout = '30s'; select pg_advisory_lock(41)")
            _ = try db.query("select set_config('statement_timeout', '10', false)")
            #expect(failure(db, "select pg_advisory_lock(41)")?.code == .timedOut)
            _ = try db.query("select set_config('statement_timeout', '0', false)")
            #expect(failure(db, "selec 1")?.code == .statementFailed)
        }
    }

    @Test func aConnectionThatCannotBeMadeIsConnectionLost() {
        do {
            _ = try PostgresConnection.connect(DatabaseConfiguration(connectionString: "postgresql://127.0.0.1:1/none?connect_timeout=2"))
            Issue.record("connecting to a closed port should fail")
        } catch {
            let failure = StoreError.from(error)
            #expect(failure.code == .connectionLost)
            #expect(failure.isConnectionLoss)
        }
    }

    @Test func aSessionReconnectsAfterItsConnectionIsKilled() throws {
        try CourierTestDatabase.with { database, db in
            let lost = LockedCount()
            let session = StoreSession(configuration: DatabaseConfiguration(connectionString: database.url),
                                       observer: .init(connectionLost: { _ in lost.add() }), pause: { _ in })
            defer { session.close() }
            let first = try session.run { try $0.migrationsApplied() }.get()
            #expect(!first.isEmpty)
            try db.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()")
            let broken = session.run { try $0.migrationsApplied() }
            #expect((try? broken.get()) == nil)
            #expect(lost.value == 1)
            #expect(try session.run { try $0.migrationsApplied() }.get() == first, "the next run connects afresh")
        }
    }
}

final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
