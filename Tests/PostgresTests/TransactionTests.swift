import CourierTestSupport
import Foundation
import Postgres
import Testing

private struct BodyFailure: Error {}

@Suite struct TransactionTests {
    private func count(_ connection: PostgresConnection) throws -> Int {
        try connection.query("select count(*) from t").rows[0].decode(0, as: Int.self)
    }

    @Test func commitMakesWritesVisible() throws {
        try withConnection { connection, database in
            try connection.simpleQuery("create table t (id int8)")
            let returned = try connection.withTransaction { tx in
                try tx.execute("insert into t values (\(1)), (\(2))")
            }
            #expect(returned == 2)
            #expect(connection.transactionStatus == .idle)
            let other = try database.connect()
            defer { other.close() }
            #expect(try count(other) == 2)
        }
    }

    @Test func throwingBodyRollsBackAndRethrows() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8)")
            #expect(throws: BodyFailure.self) {
                try connection.withTransaction { tx in
                    try tx.execute("insert into t values (\(1))")
                    throw BodyFailure()
                }
            }
            #expect(connection.transactionStatus == .idle)
            #expect(try count(connection) == 0)
        }
    }

    @Test func failedStatementRollsBackWithItsOwnError() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8 primary key)")
            let error = #expect(throws: PostgresError.self) {
                try connection.withTransaction { tx in
                    try tx.execute("insert into t values (\(1))")
                    try tx.execute("insert into t values (\(1))")
                }
            }
            #expect(error?.sqlState == "23505")
            #expect(error?.transactionStep == nil)
            #expect(try count(connection) == 0)
        }
    }

    @Test func swallowedErrorMakesCommitFail() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8 primary key)")
            let error = #expect(throws: PostgresError.self) {
                try connection.withTransaction { tx in
                    try tx.execute("insert into t values (\(1))")
                    _ = try? tx.execute("insert into t values (\(1))")
                }
            }
            #expect(error?.kind == .transactionRolledBack)
            #expect(error?.transactionStep == .commit)
            #expect(error?.description.hasPrefix("COMMIT failed") == true)
            #expect(try count(connection) == 0)
        }
    }

    @Test func commitFailureSaysCommitFailed() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8 constraint t_once unique deferrable initially deferred)")
            let error = #expect(throws: PostgresError.self) {
                try connection.withTransaction { tx in
                    try tx.execute("insert into t values (\(1)), (\(1))")  // checked at COMMIT
                }
            }
            #expect(error?.transactionStep == .commit)
            #expect(error?.sqlState == "23505")
            #expect(error?.constraintName == "t_once")
            #expect(connection.transactionStatus == .idle)
            #expect(try count(connection) == 0)
        }
    }

    @Test func beginFailureSaysBeginFailed() throws {
        try withConnection { connection, database in
            let admin = try adminConnection(database)
            defer { admin.close() }
            try terminateBackend(connection.backendPID, using: admin)
            var bodyRan = false
            let error = #expect(throws: PostgresError.self) {
                try connection.withTransaction { _ in bodyRan = true }
            }
            #expect(!bodyRan)
            #expect(error?.transactionStep == .begin)
            #expect(error?.isConnectionLoss == true)
        }
    }

    @Test func nestedTransactionsUseSavepoints() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8 primary key)")
            try connection.withTransaction { tx in
                try tx.execute("insert into t values (\(1))")
                #expect(throws: PostgresError.self) {
                    try tx.withTransaction { inner in
                        try inner.execute("insert into t values (\(2))")
                        try inner.execute("insert into t values (\(1))")  // duplicate: inner fails
                    }
                }
                #expect(tx.transactionStatus == .inTransaction)
                try tx.withTransaction { inner in try inner.execute("insert into t values (\(3))") }
            }
            let ids = try connection.query("select id from t order by id").rows.map { try $0.decode(0, as: Int.self) }
            #expect(ids == [1, 3])
        }
    }
}
