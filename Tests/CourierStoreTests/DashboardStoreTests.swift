import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct DashboardStoreTests {
    /// Every dashboard connection carries the configured statement timeout, so a page whose
    /// query waits (here on a lock another session holds) fails instead of holding the
    /// database. Without the timeout the read would wait until the lock is let go (3 s
    /// later) and then succeed.
    @Test func aReadThatWaitsPastTheStatementTimeoutFails() throws {
        try CourierTestDatabase.with { database, db in
            var configuration = DashboardStore.Configuration(database: database.configuration(applicationName: "dashboard store test"))
            configuration.statementTimeout = .milliseconds(200)
            let store = DashboardStore(configuration)
            defer { store.close() }
            try store.check()
            try db.simpleQuery("begin; lock table courier.jobs in access exclusive mode")
            let release = DispatchWorkItem { try? db.simpleQuery("rollback") }
            DispatchQueue.global().asyncAfter(deadline: .now() + 3, execute: release)
            defer { release.wait() }
            do {
                _ = try store.overview()
                Issue.record("the read succeeded")
            } catch let error as StoreError {
                #expect(error.code == .timedOut, "\(error)")
            }
        }
    }
}
