import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The jobworker process and its surroundings: pipes that close, a schema not there yet.
@Suite(.serialized) struct ProcessSignalsTests {
    /// `jobworker 2>&1 | tee log`, then Ctrl-C kills tee: the worker's next log line hits
    /// a closed pipe. It must neither die of SIGPIPE nor stop shutting down gracefully.
    @Test func aWorkerWhoseStderrPipeClosedStillShutsDownGracefully() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try database.connect()
        defer { db.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try SpawnedProcess.binDirectory() + "/jobworker")
        process.arguments = ["--database-url", database.url, "--poll-interval", "100ms", "--log-level", "debug"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(try await eventually { try db.query("select count(*)::int from courier.workers").rows[0].decode(0, as: Int.self) == 1 })
        // Close the only read end: every later write to the pipe raises SIGPIPE / EPIPE.
        try pipe.fileHandleForReading.close()
        try pipe.fileHandleForWriting.close()
        kill(process.processIdentifier, SIGTERM)
        _ = await eventually(timeout: .seconds(30)) { !process.isRunning }
        #expect(!process.isRunning)
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus), not exited")
        #expect(process.terminationStatus == 0)
        // The graceful path ran to its end: the worker deregistered.
        #expect(try db.query("select count(*)::int from courier.workers").rows[0].decode(0, as: Int.self) == 0)
    }

    /// A worker started before `jobctl migrate` says once what is missing, and no statement
    /// fails over and over on relations that do not exist; it starts once migrated.
    @Test func aWorkerBeforeMigrateSaysSoOnceAndThenWaitsQuietly() async throws {
        try await TestDatabase.with { database in
            let server = try FaultServer()
            defer { server.stop() }
            let worker = try SpawnedProcess("jobworker", ["--database-url", database.url, "--allow-private-networks",
                                                          "--poll-interval", "100ms", "--lease", "1s"])
            defer { worker.cleanUp() }
            #expect(try await eventually { worker.output.contains("lacks migrations") }, "\(worker.output)")
            // Two more rounds, and still quiet. Until the schema is there only the claimer runs
            // statements (the other loops wait for the schema without one): a schema check each
            // round, seen here as a new query_start of that statement in pg_stat_activity.
            let watcher = try database.connect()
            defer { watcher.close() }
            let check = "%to_regclass('courier.schema_migrations')%"
            var checks: Set<String> = []
            let checkedAgain = try await eventually {
                for row in try watcher.query("""
                    select query_start::text from pg_stat_activity
                    where datname = current_database() and pid <> pg_backend_pid() and query like \(check)
                    """).rows { checks.insert(try row.decode(0, as: String.self)) }
                return checks.count >= 3
            }
            #expect(checkedAgain, "the claimer checked the schema twice more: \(checks)")
            let before = worker.output
            #expect(before.components(separatedBy: "lacks migrations").count - 1 == 1, "said once: \(before)")
            #expect(!before.contains("does not exist") && !before.contains("statement failed"), "quiet while waiting: \(before)")

            #expect(try SpawnedProcess.run("jobctl", ["migrate", "--database-url", database.url]).status == 0)
            let (status, output) = try SpawnedProcess.run("jobctl", ["enqueue", "--url", server.baseURL + "/after", "--database-url", database.url])
            #expect(status == 0, "\(output)")
            #expect(try await eventually { server.requestCount(path: "/after") >= 1 }, "the worker starts once migrated: \(worker.output)")
            worker.signal(SIGTERM)
            #expect(await worker.waitForExit(timeout: .seconds(20)) == 0)
            #expect(!worker.output.contains("does not exist"), "\(worker.output)")
        }
    }
}
