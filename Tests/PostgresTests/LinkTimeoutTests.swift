import CourierTestSupport
import Foundation
@testable import Postgres
import Testing

/// A silent link is noticed by the client: keepalive parameters and the response timeout.
@Suite struct LinkTimeoutTests {
    @Test func keepalivesAreAddedUnlessTheConnectionStringSetsThem() throws {
        var configuration = PostgresConfiguration(connectionString: "host=db.internal keepalives_idle=30", keepalive: .init())
        let parameters = Dictionary(try configuration.connectParameters().map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        #expect(parameters["keepalives"] == "1")
        #expect(parameters["keepalives_idle"] == "30", "the connection string wins")
        #expect(parameters["keepalives_interval"] == "2")
        #expect(parameters["keepalives_count"] == "3")
        #expect(parameters["tcp_user_timeout"] == "15000")
        #expect(parameters["connect_timeout"] == "10")
        configuration.keepalive = nil
        #expect(try !configuration.connectParameters().contains { $0.key == "keepalives" })
    }

    @Test func aFrozenLinkEndsInAConnectionLossAfterTheResponseTimeout() throws {
        try TestDatabase.with { database in
            let proxy = try FreezableProxy(forwardingTo: database.url)
            defer { proxy.stop() }
            var configuration = PostgresConfiguration(connectionString: try proxy.url(for: database.url), keepalive: .init())
            configuration.responseTimeout = .milliseconds(500)
            let connection = try PostgresConnection.connect(configuration)
            defer { connection.close() }
            #expect(try connection.query("select 1").rows[0].decode(0, as: Int.self) == 1, "answers while the link is live")
            proxy.freeze()
            defer { proxy.thaw() }
            do {
                _ = try connection.query("select 2")
                Issue.record("a frozen link must not answer")
            } catch let error as PostgresError {
                #expect(error.isConnectionLoss, "\(error)")
                #expect(error.message.contains("response timeout"))
            }
            #expect(!connection.isConnected, "the connection was closed, so the next use reconnects")
        }
    }

    @Test func theResponseTimeoutKeepsErrorsAndMultiStatementResults() throws {
        try TestDatabase.with { database in
            var configuration = PostgresConfiguration(connectionString: database.url)
            configuration.responseTimeout = .seconds(5)
            let connection = try PostgresConnection.connect(configuration)
            defer { connection.close() }
            try connection.simpleQuery("create table t (n int primary key); insert into t values (1); insert into t values (2)")
            #expect(try connection.query("select count(*)::int from t").rows[0].decode(0, as: Int.self) == 2)
            do {
                try connection.execute("insert into t values (1)")
                Issue.record("a duplicate key must fail")
            } catch let error as PostgresError {
                #expect(error.sqlState == "23505")
            }
            #expect(try connection.query("select \(3)::int").rows[0].decode(0, as: Int.self) == 3, "the connection stays usable")
        }
    }
}
