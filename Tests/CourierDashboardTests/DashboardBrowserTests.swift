import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The dashboard in a real browser: a `jobctl dashboard` process on loopback over a test
/// database, driven by Chromium through Selenium (Tests/CourierDashboardTests/Browser/).
/// Fails, never skips, when Chromium, chromedriver or the Python environment is missing
/// (scripts/install-deps.sh installs them). Screenshots are saved under
/// `.build/test-artifacts/dashboard/`; with COURIER_UPDATE_SCREENSHOT=1 the overview
/// screenshot also replaces docs/dashboard.png (the README's).
@Suite("dashboard in a browser", .serialized)
struct DashboardBrowserTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let artifacts = root.appendingPathComponent(".build/test-artifacts/dashboard")

    @Test func pagesLiveUpdatesReplayCancelAndEscapingInChromium() throws {
        for program in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            #expect(FileManager.default.isExecutableFile(atPath: program),
                    "\(program) is missing: run scripts/install-deps.sh (Debian's chromium and chromium-driver)")
        }
        let python = try #require(ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"].flatMap { $0.isEmpty ? nil : $0 },
                                  "COURIER_TEST_PYTHON is not set: run the tests with scripts/test.sh")

        try CourierTestDatabase.with { database, db in
            let fixtures = try Self.prepare(db)
            let dashboard = try SpawnedProcess("jobctl", ["dashboard", "--listen", "127.0.0.1:0"],
                                               environment: ["DATABASE_URL": database.url, "COURIER_DASHBOARD_TOKEN": ""])
            defer { dashboard.cleanUp() }
            var base: String?
            try eventuallyBlocking(timeout: .seconds(30)) {
                if let line = dashboard.output.split(separator: "\n").first(where: { $0.contains("serving http://") }),
                   let start = line.range(of: "http://") {
                    base = String(line[start.lowerBound...].prefix { $0 != " " }).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
                }
                return base != nil || !dashboard.isRunning
            }
            let url = try #require(base, "the dashboard did not start: \(dashboard.output)")

            try? FileManager.default.removeItem(at: Self.artifacts)
            try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
            let script = Self.root.appendingPathComponent("Tests/CourierDashboardTests/Browser/dashboard_browser.py").path
            let fixtureObject: [String: Any] = ["job": fixtures.job, "hostile_dead_letter": fixtures.hostileLetter,
                                                "replay_count": fixtures.replayCount, "replay_destination": fixtures.replayDestination]
            let fixtureJSON = String(decoding: try JSONSerialization.data(withJSONObject: fixtureObject), as: UTF8.self)
            let (status, output) = try Self.run(python, [script, url, database.url, Self.artifacts.path, fixtureJSON])
            print(output)
            #expect(status == 0, "the browser checks failed:\n\(output)\ndashboard log:\n\(dashboard.output)")
            #expect(output.contains("all browser checks passed"))
            // Each action was logged with who and what.
            #expect(dashboard.output.contains("dashboard: local replayed \(fixtures.replayCount) dead letters"), "\(dashboard.output)")
            #expect(dashboard.output.contains("dashboard: local cancel job \(fixtures.job)"))
            let overview = Self.artifacts.appendingPathComponent("dashboard-overview.png")
            #expect(FileManager.default.fileExists(atPath: overview.path))
            if ProcessInfo.processInfo.environment["COURIER_UPDATE_SCREENSHOT"] == "1" {
                let docs = Self.root.appendingPathComponent("docs/dashboard.png")
                try? FileManager.default.removeItem(at: docs)
                try FileManager.default.copyItem(at: overview, to: docs)
            }
        }
    }

    /// Jobs and dead letters for the script, and an hour of attempt figures for the chart.
    static func prepare(_ db: PostgresConnection) throws -> (job: Int64, hostileLetter: Int64, replayCount: Int, replayDestination: String) {
        func enqueue(_ url: String, queue: String = "default", body: String? = nil) throws -> Int64 {
            try TestRows(db).job(url: url) { request in
                request.queue = queue
                request.body = body
                request.headers = [("Authorization", .literal("Bearer not-shown")), ("Content-Type", .literal("application/json"))]
                request.runAt = Date().addingTimeInterval(3600)
            }
        }
        var toDeadLetter: [Int64] = []
        for index in 0..<4 { toDeadLetter.append(try enqueue("http://replay.example/hook/\(index)", queue: "webhooks")) }
        for index in 0..<2 { toDeadLetter.append(try enqueue("http://other.example/sync/\(index)", queue: "sync")) }
        let hostile = try enqueue("http://other.example/x?<script>alert(1)</script>", body: "<img src=x onerror=window.__xss=1>")
        toDeadLetter.append(hostile)
        _ = try JobsTable.cancel(ids: toDeadLetter, on: db)
        let hostileLetter = try db.query("select id from courier.dead_letters where job_id = \(hostile)").rows[0].decode(0, as: Int64.self)
        for index in 0..<5 { _ = try enqueue("http://api.example/orders/\(index)", queue: index < 3 ? "default" : "webhooks") }
        let job = try enqueue("http://api.example/to-cancel")
        try db.query("""
            insert into courier.attempt_stats (bucket, queue, destination, class, attempts)
            select date_trunc('minute', now()) - m * interval '1 minute', 'default', 'http://api.example:80', c,
                   case when c = 'success' then 40 + (20 * sin(m / 6.0))::int else 3 + (m % 7) end
            from generate_series(0, 59) m, unnest(array['success', 'server']) c
            """)
        return (job, hostileLetter, 4, "http://replay.example:80")
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-browser-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        _ = eventuallyBlocking(timeout: .seconds(300), every: .milliseconds(100)) { !process.isRunning }
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        return (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }
}
