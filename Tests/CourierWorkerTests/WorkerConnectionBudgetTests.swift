import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres
import Testing

/// The connection budget deploy/README.md promises: a worker holds six database
/// connections (claimer, completer, heartbeater, listener, traffic keeper, and one shared
/// by the housekeeping services), whatever its concurrency.
@Suite struct WorkerConnectionBudgetTests {
    @Test func aWorkerHoldsSixDatabaseConnections() async throws {
        try await WorkerHarness.with { h in
            let application = "budget-\(UUID().uuidString.prefix(8).lowercased())"
            try h.start { configuration in
                configuration.database.applicationName = application
                configuration.concurrency = 64
            }
            // A finished job makes every service, the completer included, use its connection.
            let id = try h.enqueue("/ok")
            _ = try await h.waitFor(id, .succeeded)
            func backends() throws -> Int {
                try h.db.query("select count(*)::int from pg_stat_activity where application_name = \(application)")
                    .rows[0].decode(0, as: Int.self)
            }
            let settled = try await h.eventually { try backends() == 6 }
            let seen = try backends()
            #expect(settled, "backends: \(seen)")
            // Still six after more work (no service opens a connection of its own later).
            let second = try h.enqueue("/ok")
            _ = try await h.waitFor(second, .succeeded)
            #expect(try backends() == 6)
        }
    }
}
