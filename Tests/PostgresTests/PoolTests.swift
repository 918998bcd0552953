import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct PoolTests {
    @Test func fiftyConcurrentTasksShareFourConnections() async throws {
        try await TestDatabase.with { (database: TestDatabase) async throws in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 4)
            defer { pool.close() }
            try await pool.withConnection { try $0.simpleQuery("create table hits (task int8, pid int4)") }
            let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
                for task in 0..<50 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            _ = try connection.withTransaction { tx in
                                try tx.execute("insert into hits select \(task), pg_backend_pid() from pg_sleep(0.01)")
                            }
                            return connection.backendPID
                        }
                    }
                }
                var pids = Set<Int32>()
                for try await pid in group { pids.insert(pid) }
                return pids
            }
            #expect(pids.count <= 4)
            #expect(pool.connectionCount <= 4)
            let stored = try await pool.withConnection { connection in
                try connection.query("select count(distinct task), count(distinct pid) from hits").rows[0].values
            }
            #expect(stored[0] == "50")
            #expect(Int(stored[1] ?? "") ?? 99 <= 4)
        }
    }

    @Test func connectionLossCostsOneErrorThenTheNextCallWorks() async throws {
        try await TestDatabase.with { (database: TestDatabase) async throws in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 1)
            defer { pool.close() }
            let firstPID = try await pool.withConnection { $0.backendPID }
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withConnection { connection in
                    try connection.query("select pg_terminate_backend(pg_backend_pid())")
                }
            }
            #expect(error?.isConnectionLoss == true)
            let secondPID = try await pool.withConnection { connection in
                try connection.query("select pg_backend_pid()").rows[0].decode(0, as: Int32.self)
            }
            #expect(secondPID != firstPID)
            #expect(pool.connectionCount == 1)
        }
    }

    @Test func idleConnectionKilledByTheServerCostsAtMostOneError() async throws {
        try await TestDatabase.with { (database: TestDatabase) async throws in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 1)
            defer { pool.close() }
            let firstPID = try await pool.withConnection { $0.backendPID }
            let admin = try adminConnection(database)
            defer { admin.close() }
            try terminateBackend(firstPID, using: admin)
            // Usually the borrow-time check already sees the closed socket and replaces the
            // connection; if the socket is not closed yet, the first call fails as a loss.
            do {
                _ = try await pool.withConnection { try $0.query("select 1") }
            } catch let error as PostgresError {
                #expect(error.isConnectionLoss)
            }
            let value = try await pool.withConnection { connection in
                try connection.query("select \(41) + 1").rows[0].decode(0, as: Int.self)
            }
            #expect(value == 42)
            #expect(try await pool.withConnection { $0.backendPID } != firstPID)
        }
    }

    @Test func blockingBorrowAndCleanReturn() throws {
        try TestDatabase.with { database in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 1)
            defer { pool.close() }
            try pool.withConnectionBlocking { connection in
                try connection.simpleQuery("BEGIN")
                try connection.listen("left_behind")
            }
            let state = try pool.withConnectionBlocking { connection in
                (connection.transactionStatus, connection.listenedChannels,
                 try connection.query("select count(*) from pg_listening_channels()").rows[0].decode(0, as: Int.self))
            }
            #expect(state.0 == .idle)
            #expect(state.1.isEmpty)
            #expect(state.2 == 0)
        }
    }

    @Test func connectFailureThrowsConnectionErrorAndFreesTheSlot() async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(connectionString: "host=127.0.0.1 port=1 connect_timeout=5"), maxConnections: 1)
        defer { pool.close() }
        for _ in 0..<2 {
            let error = await #expect(throws: PostgresError.self) { try await pool.withConnection { $0.backendPID } }
            #expect(error?.kind == .connection)
        }
        #expect(pool.connectionCount == 0)
    }

    @Test func closedPoolRefusesBorrows() async throws {
        try await TestDatabase.with { (database: TestDatabase) async throws in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 2)
            _ = try await pool.withConnection { $0.backendPID }
            pool.close()
            #expect(pool.connectionCount == 0)
            let error = await #expect(throws: PostgresError.self) { try await pool.withConnection { $0.backendPID } }
            #expect(error?.kind == .closed)
        }
    }

    @Test func cancelledWaiterStopsWaiting() async throws {
        try await TestDatabase.with { (database: TestDatabase) async throws in
            let pool = PostgresPool(configuration: database.configuration(), maxConnections: 1)
            defer { pool.close() }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = Task {
                try await pool.withConnection { _ in
                    holding.signal()
                    release.wait()
                }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { holding.wait(); continuation.resume() }
            }
            let waiter = Task { try await pool.withConnection { $0.backendPID } }
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            release.signal()
            try await holder.value
            #expect(try await pool.withConnection { $0.isConnected })
        }
    }
}
