import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// No head-of-line blocking between destinations without a policy: three jobworker
/// processes, a large or slow backlog for one loopback destination, and a trickle for
/// another. Asserted as orderings (the trickle finished while the backlog still waited);
/// pickup figures are printed.
@Suite(.serialized) struct FairClaimFleetTests {
    func workerArguments(_ url: String) -> [String] {
        ["--database-url", url, "--allow-private-networks", "--concurrency", "16", "--lease", "30s",
         "--poll-interval", "200ms", "--shutdown-grace", "1s"]
    }

    func count(_ db: PostgresConnection, _ sql: PostgresQuery) throws -> Int {
        try db.query(sql).rows[0].decode(0, as: Int.self)
    }

    func completed(_ db: PostgresConnection, _ destination: String) throws -> Int {
        try count(db, "select count(*)::bigint from courier.completed_jobs where destination = \(destination)")
    }

    func startWorkers(_ url: String) throws -> [SpawnedProcess] {
        try (0..<3).map { _ in try SpawnedProcess("jobworker", workerArguments(url)) }
    }

    func stop(_ workers: [SpawnedProcess]) async {
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { _ = await worker.waitForExit(timeout: .seconds(15)) }
    }

    /// Enqueues `n` jobs for `server` one at a time, each once the one before it reached the
    /// server (a trickle paced by its own pickups, not by a clock), noting when each was sent
    /// (monotonic ns, by path). Stops early when a job is not picked up within the timeout:
    /// the caller's count of completed jobs then fails.
    func trickle(_ db: PostgresConnection, _ n: Int, to server: FaultServer) async throws -> [String: UInt64] {
        var sent: [String: UInt64] = [:]
        for i in 0..<n {
            let path = "/b/\(i)"
            sent[path] = FaultServer.monotonicNanos()
            _ = try JobsTable.enqueue(EnqueueRequest(url: server.baseURL + path), on: db)
            guard await eventually(timeout: .seconds(60), { server.requestCount(path: path) >= 1 }) else { break }
        }
        return sent
    }

    /// From enqueue to the request's start at the receiver, in ms: p50, p99, max.
    func pickup(_ server: FaultServer, sent: [String: UInt64]) -> (p50: Double, p99: Double, max: Double) {
        let ms = server.requestSpans.compactMap { span in sent[span.path].map { Double(span.startNanos &- $0) / 1e6 } }.sorted()
        guard !ms.isEmpty else { return (0, 0, 0) }
        func at(_ q: Double) -> Double { ms[min(ms.count - 1, Int(Double(ms.count - 1) * q))] }
        return (at(0.5), at(0.99), ms.last!)
    }

    @Test func aTrickleIsNotStarvedByALargeBacklogEnqueuedFirst() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let backlogged = try FaultServer(defaultBehavior: .json200)
        defer { backlogged.stop() }
        let trickled = try FaultServer(defaultBehavior: .json200)
        defer { trickled.stop() }
        let backlog = 100_000
        for chunk in stride(from: 0, to: backlog, by: 10_000) {
            _ = try JobsTable.enqueueMany((chunk..<chunk + 10_000).map { EnqueueRequest(url: backlogged.baseURL + "/a/\($0)") }, on: db)
        }
        let a = "http://127.0.0.1:\(backlogged.port)"
        let b = "http://127.0.0.1:\(trickled.port)"

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        // The backlog is being drained before the trickle starts.
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(20)) { backlogged.requestCount() >= 100 })
        let sent = try await trickle(db, 20, to: trickled)
        let trickleDone = try await eventually(timeout: .seconds(120), every: .milliseconds(20)) { try completed(db, b) == 20 }
        let waitingWhenDone = try count(db, "select count(*)::bigint from courier.jobs where destination = \(a) and state = 'available'")
        await stop(workers)
        let figures = pickup(trickled, sent: sent)
        print(String(format: "fair claim, backlog: trickle pickup p50 %.1f ms, p99 %.1f ms, max %.1f ms; backlog still waiting when the trickle was done: %d/%d",
                     figures.p50, figures.p99, figures.max, waitingWhenDone, backlog))
        #expect(trickleDone)
        #expect(waitingWhenDone > backlog / 2, "the trickle finished while most of the backlog still waited (\(waitingWhenDone) waiting)")
    }

    @Test func aSlowDestinationDoesNotTakeEverySlot() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let slow = try FaultServer(defaultBehavior: .slow(delay: .seconds(3), then: .json200))
        defer { slow.stop() }
        let healthy = try FaultServer(defaultBehavior: .json200)
        defer { healthy.stop() }
        // More slow jobs than the fleet's 48 slots, enqueued first.
        let backlog = 200
        _ = try JobsTable.enqueueMany((0..<backlog).map { EnqueueRequest(url: slow.baseURL + "/a/\($0)") }, on: db)
        let a = "http://127.0.0.1:\(slow.port)"
        let b = "http://127.0.0.1:\(healthy.port)"

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        // Every worker holds its share of slow requests.
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(20)) { slow.requestCount() >= 45 })
        let sent = try await trickle(db, 10, to: healthy)
        let healthyDone = try await eventually(timeout: .seconds(120), every: .milliseconds(20)) { try completed(db, b) == 10 }
        let slowDone = try completed(db, a)
        let slowRunning = try count(db, "select count(*)::bigint from courier.jobs where destination = \(a) and state = 'running'")
        await stop(workers)
        let figures = pickup(healthy, sent: sent)
        print(String(format: "fair claim, slow destination: healthy pickup p50 %.1f ms, p99 %.1f ms, max %.1f ms; slow jobs done %d/%d, in flight %d, when the healthy ones were done",
                     figures.p50, figures.p99, figures.max, slowDone, backlog, slowRunning))
        #expect(healthyDone)
        #expect(slowRunning > 0, "the slow jobs were still in flight")
        #expect(slowDone < backlog / 2, "the healthy jobs did not wait for the slow backlog to drain (\(slowDone) slow jobs done first)")
    }
}
