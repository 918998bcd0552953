import CourierStore
import CourierTestSupport
import Postgres
import Testing

@Suite struct DashboardStoreTests {
    /// Every dashboard connection carries the configured statement timeout, so a page whose
    /// query waits (here on a lock another session holds) fails instead of holding the
    /// database. The lock is let go as soon as the read returns; without the timeout the
    /// read would wait until the server ends the idle locking transaction (30 s, a backstop
    /// against a hang) and then succeed.
    @Test func aReadThatWaitsPastTheStatementTimeoutFails() throws {
        try CourierTestDatabase.with { database, db in
            var configuration = DashboardStore.Configuration(database: database.configuration(applicationName: "dashboard store test"))
            configuration.statementTimeout = .milliseconds(200)
            let store = DashboardStore(configuration)
            defer { store.close() }
            try store.check()
            try db.simpleQuery("set idle_in_transaction_session_timeout = '30s'; begin; lock table courier.jobs in access exclusive mode")
            defer { try? db.simpleQuery("rollback; reset idle_in_transaction_session_timeout") }
            do {
                _ = try store.overview()
                Issue.record("the read succeeded")
            } catch let error as StoreError {
                #expect(error.code == .timedOut, "\(error)")
            }
        }
    }
}
