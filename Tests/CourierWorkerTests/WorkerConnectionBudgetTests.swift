import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// The connection budget deploy/README.md promises: a worker holds
/// `Worker.databaseConnections` (six: claimer, completer, heartbeater, listener, traffic
/// keeper, and one shared by the housekeeping services), whatever its concurrency.
@Suite struct WorkerConnectionBudgetTests {
    @Test func aWorkerHoldsSixDatabaseConnections() async throws {
        #expect(Worker.databaseConnections.count == 6)
        let budget = Worker.databaseConnections.count
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
            let settled = try await h.eventually { try backends() == budget }
            let seen = try backends()
            #expect(settled, "backends: \(seen)")
            // Still six after more work (no service opens a connection of its own later).
            let second = try h.enqueue("/ok")
            _ = try await h.waitFor(second, .succeeded)
            #expect(try backends() == budget)
        }
    }

    /// The list names exactly the service threads the worker builds (each owns one
    /// connection), in start order; no database is needed to build them.
    @Test func theConnectionListNamesEveryServiceThread() {
        var configuration = WorkerConfiguration(database: PostgresConfiguration(
            connectionString: "host=127.0.0.1 port=1 user=courier dbname=none connect_timeout=1"))
        configuration.concurrency = 64
        let worker = Worker(configuration: configuration, httpHandler: NoopJobHandler(), logger: Logger(level: .error, sink: { _ in }))
        #expect(worker.serviceThreadNames == Worker.databaseConnections)
    }

    /// deploy/README.md, the README and docs/ say how many connections a worker holds; each
    /// says the count of `Worker.databaseConnections`, and the budget table has one row per connection.
    @Test func theDocsStateTheSameCount() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let count = Worker.databaseConnections.count
        let words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
        let pattern = try Regex(#"holds \**(\w+)\** database connections"#)
        for file in ["deploy/README.md", "README.md", "docs/architecture.md", "docs/operations.md"] {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let stated = text.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) }
            #expect(!stated.isEmpty, "\(file) states no connection count")
            for number in stated {
                #expect(number == String(count) || number == words[count], "\(file) says \(number), the worker holds \(count)")
            }
        }
        let deploy = try String(contentsOf: root.appendingPathComponent("deploy/README.md"), encoding: .utf8)
        let section = try #require(deploy.components(separatedBy: "## Connection budget").dropFirst().first)
            .components(separatedBy: "\n## ")[0]
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| connection") }
        #expect(rows.count == count, "the budget table lists \(rows.count) connections")
    }
}
