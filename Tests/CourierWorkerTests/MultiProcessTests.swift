import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The worker as users run it: separate jobworker processes sharing one database.
@Suite(.serialized) struct MultiProcessTests {
    func workerArguments(_ url: String, lease: String = "2s", concurrency: Int = 16) -> [String] {
        ["--database-url", url, "--allow-private-networks", "--concurrency", String(concurrency), "--lease", lease,
         "--poll-interval", "200ms", "--backoff-base", "100ms", "--backoff-cap", "500ms", "--shutdown-grace", "5s"]
    }

    @Test func aWorkerKilledMidRunLosesNothingAndOnlyItsJobsRepeat() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(40), then: .json200))
        defer { server.stop() }
        let total = 3000
        let requests = (0..<total).map { EnqueueRequest(url: server.baseURL + "/job/\($0)") }
        #expect(try JobsTable.enqueueMany(requests, on: db).inserted == total)

        let workers = try (0..<3).map { _ in try SpawnedProcess("jobworker", workerArguments(database.url)) }
        defer { workers.forEach { $0.cleanUp() } }
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(100)) { server.requestCount() >= 600 })
        let victim = workers[0]
        let victimID = try db.query("select id::text from courier.workers where pid = \(Int(victim.pid))").rows.first?.decode(0, as: String.self)
        victim.signal(SIGKILL)
        _ = await victim.waitForExit(timeout: .seconds(5))

        let finished = try await eventually(timeout: .seconds(90), every: .milliseconds(100)) {
            try db.query("select count(*)::bigint from courier.completed_jobs").rows[0].decode(0, as: Int.self) == total
        }
        #expect(finished, "every job must succeed")
        #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        #expect(try db.query("select count(*)::bigint from courier.dead_letters").rows[0].decode(0, as: Int.self) == 0)

        // Every job reached the server; repeats carry the job's one key and belong to the killed worker.
        var byPath: [String: [String?]] = [:]
        for request in server.requests { byPath[request.path, default: []].append(request.header("Idempotency-Key")) }
        #expect(byPath.count == total)
        let rescued = Set(try db.query("""
            select substring(url from '/job/.*$') from courier.completed_jobs
            where errors @> '[{"class": "lease_expired"}]'
            """).rows.map { try $0.decode(0, as: String.self) })
        let repeated = byPath.filter { $0.value.count > 1 }
        for (path, keys) in repeated {
            #expect(Set(keys).count == 1 && keys.first! != nil, "\(path) repeated with different keys")
            #expect(rescued.contains(path), "\(path) was repeated but was not rescued from the killed worker")
        }
        if let victimID {
            let foreign = try db.query("""
                select count(*)::bigint from courier.completed_jobs, jsonb_array_elements(errors) e
                where e->>'class' = 'lease_expired' and e->>'worker' <> \(victimID)
                """).rows[0].decode(0, as: Int.self)
            #expect(foreign == 0, "only the killed worker's leases expire")
        }
        for worker in workers.dropFirst() { worker.signal(SIGTERM) }
        for worker in workers.dropFirst() { #expect(await worker.waitForExit(timeout: .seconds(15)) == 0) }
    }

    @Test func workersRideOutADatabaseRestart() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("courier-restart-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir)
        // Below the ephemeral port range: during the restart a client socket could otherwise take the port.
        let port = String(Int.random(in: 20000...30000))
        let start = try SpawnedProcess.run("jobctl", ["devdb", "start", "--dir", dir, "--port", port, "--fast"])
        #expect(start.status == 0, "devdb start: \(start.output)")
        defer {
            _ = try? SpawnedProcess.run("jobctl", ["devdb", "stop", "--dir", dir, "--port", port])
            try? FileManager.default.removeItem(atPath: dir)
        }
        // The URL is the first line (stdout); with --port a note about the TCP password follows (stderr).
        let url = String(start.output.split(separator: "\n").first ?? "").trimmingCharacters(in: .whitespaces)
        #expect(try SpawnedProcess.run("jobctl", ["migrate", "--database-url", url]).status == 0)
        let server = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(10), then: .json200))
        defer { server.stop() }
        let total = 1500
        do {
            let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: url))
            _ = try JobsTable.enqueueMany((0..<total).map { EnqueueRequest(url: server.baseURL + "/r/\($0)") }, on: db)
            db.close()
        }
        let workers = try (0..<2).map { _ in try SpawnedProcess("jobworker", workerArguments(url, lease: "5s", concurrency: 8)) }
        defer { workers.forEach { $0.cleanUp() } }
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(100)) { server.requestCount() >= 200 })
        let stop = try SpawnedProcess.run("jobctl", ["devdb", "stop", "--dir", dir, "--port", port])
        #expect(stop.status == 0, "devdb stop: \(stop.output)")
        // A measured window: the outage itself lasts 3 s, several of the workers' backoff cycles
        // (cap 500 ms), through which they must keep running and not log each try.
        try await Task.sleep(for: .seconds(3))
        let allRunning = workers.allSatisfy { $0.isRunning }
        #expect(allRunning, "workers keep running while the database is away")
        let restart = try SpawnedProcess.run("jobctl", ["devdb", "start", "--dir", dir, "--port", port, "--fast"])
        #expect(restart.status == 0, "devdb restart: \(restart.output)")

        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: url))
        defer { db.close() }
        let finished = try await eventually(timeout: .seconds(90), every: .milliseconds(100)) {
            try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0
        }
        #expect(finished, "the workers reconnect and finish every job")
        #expect(try db.query("select count(*)::bigint from courier.completed_jobs").rows[0].decode(0, as: Int.self) == total)
        #expect(Set(server.requests.map(\.path)).count == total)
        for worker in workers {
            let outages = worker.output.components(separatedBy: "database unreachable").count - 1
            #expect(outages >= 1 && outages <= 2, "the outage is logged once, not per try:\n\(worker.output.suffix(2000))")
            let lines = worker.output.split(separator: "\n").count
            #expect(lines < 60, "no log spinning during the outage (\(lines) lines)")
            worker.signal(SIGTERM)
        }
        for worker in workers { #expect(await worker.waitForExit(timeout: .seconds(15)) == 0) }
    }
}
