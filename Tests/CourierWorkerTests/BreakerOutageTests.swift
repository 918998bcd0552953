import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The fleet-shared breaker as users run it: separate jobworker processes sharing one
/// database, a destination that goes down and comes back, and a healthy one beside it.
@Suite(.serialized) struct BreakerOutageTests {
    static let downPath = "/down"

    func workerArguments(_ url: String, cooldown: String = "2s", cooldownMax: String = "4s") -> [String] {
        ["--database-url", url, "--allow-private-networks", "--concurrency", "8", "--lease", "5s",
         "--poll-interval", "200ms", "--backoff-base", "200ms", "--backoff-cap", "1s", "--shutdown-grace", "5s",
         "--breaker-cooldown", cooldown, "--breaker-cooldown-max", cooldownMax]
    }

    func count(_ db: PostgresConnection, _ sql: PostgresQuery) throws -> Int {
        try db.query(sql).rows[0].decode(0, as: Int.self)
    }

    func breakerState(_ db: PostgresConnection, _ destination: String) throws -> String? {
        try db.query("select state from courier.breakers where destination = \(destination)").rows.first?.decode(0, as: String.self)
    }

    /// Attempt counts of the destination's waiting and running jobs, by id.
    func attempts(_ db: PostgresConnection, _ destination: String) throws -> [Int64: Int] {
        var result: [Int64: Int] = [:]
        for row in try db.query("select id, attempt from courier.jobs where destination = \(destination)").rows {
            result[try row.decode(0, as: Int64.self)] = try row.decode(1, as: Int.self)
        }
        return result
    }

    /// Probe grants (→ half_open) recorded for the destination since `since` (database clock).
    func probeGrants(_ db: PostgresConnection, _ destination: String, since: Date) throws -> Int {
        try count(db, """
            select count(*)::bigint from courier.breaker_events
            where destination = \(destination) and to_state = 'half_open' and at >= \(since)
            """)
    }

    @Test func aFleetStopsHammeringADeadDestinationAndSpendsNoAttemptsWhileItsBreakerIsOpen() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try database.connect()
        defer { db.close() }
        let failing = try FaultServer()
        defer { failing.stop() }
        let healthy = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(20), then: .json200))
        defer { healthy.stop() }
        // 503 without Retry-After: a `server` failure, which counts for the breaker.
        failing.setBehavior(.respond(status: 503, headers: [], body: "down"), forPath: Self.downPath)
        let down = "http://127.0.0.1:\(failing.port)"

        // max_attempts 10: the failures before the breaker opens (a job or two per worker
        // slot, a few attempts at most) and the probes cannot exhaust any job.
        let total = 200
        _ = try JobsTable.enqueueMany((0..<total).map { i in
            var r = EnqueueRequest(url: failing.baseURL + Self.downPath + "?job=\(i)")
            r.maxAttempts = 10
            return r
        }, on: db)

        let workers = try (0..<3).map { _ in try SpawnedProcess("jobworker", workerArguments(database.url)) }
        defer { workers.forEach { $0.cleanUp() } }

        // 1. The breaker opens.
        let opened = try await eventually(timeout: .seconds(60)) { try breakerState(db, down) == "open" }
        #expect(opened, "the breaker opens; requests so far: \(failing.requestCount(path: Self.downPath))")
        guard opened else { return }
        // Requests already in flight when it opened land now; none start afterwards. The
        // window begins once the destination has nothing running (a probe needs the 2 s cooldown).
        let settled = try await eventually(timeout: .seconds(20)) {
            try count(db, "select count(*)::bigint from courier.jobs where destination = \(down) and state = 'running'") == 0
        }
        #expect(settled, "requests in flight at the trip finish")
        let windowStart = Date()
        let windowClock = ContinuousClock.now
        let attemptsAtOpen = try attempts(db, down)
        let requestsBeforeOpen = failing.requestCount(path: Self.downPath)
        #expect(attemptsAtOpen.count == total, "no job was dead-lettered before the breaker opened")
        #expect(try breakerState(db, down) != "closed")

        // 2. Meanwhile, a healthy destination's jobs all finish.
        _ = try JobsTable.enqueueMany((0..<100).map { EnqueueRequest(url: healthy.baseURL + "/ok?job=\($0)") }, on: db)
        let healthyDone = try await eventually(timeout: .seconds(60)) {
            try count(db, "select count(*)::bigint from courier.completed_jobs where destination = \("http://127.0.0.1:\(healthy.port)")") == 100
        }
        #expect(healthyDone, "100 healthy jobs finish while the other destination is down")
        #expect(try breakerState(db, down) != "closed", "...and the dead destination's breaker stayed open meanwhile")

        // 3. During the next 6 s at most 3 requests reach the dead destination from the whole fleet.
        // A measured window: the fleet's requests to the dead destination are counted over 6 s.
        try await Task.sleep(until: windowClock + .seconds(6), clock: .continuous)
        let windowEnd = windowStart.addingTimeInterval(6)
        let inWindow = failing.requests.filter {
            $0.pathWithoutQuery == Self.downPath && $0.arrivedAt >= windowStart && $0.arrivedAt < windowEnd
        }
        #expect(inWindow.count <= 3, "\(inWindow.count) requests reached the dead destination in 6 s while its breaker was open")
        #expect(inWindow.count >= 1, "the fleet probes the destination after the 2 s cooldown")

        // 4. No job spent an attempt while the breaker was open, except the probes: one attempt per probe grant.
        // The breaker goes on probing after each cooldown (2 s, then up to 4 s): two probes reached the destination.
        let probedAgain = await eventually(timeout: .seconds(30)) { failing.requestCount(path: Self.downPath) - requestsBeforeOpen >= 2 }
        #expect(probedAgain, "the breaker kept probing (cooldown 2 s, then up to 4 s)")
        var snapshot: (attempts: [Int64: Int], requests: Int)?
        let consistent = try await eventually(timeout: .seconds(30)) {
            // A consistent snapshot: no probe running, and no request arrived while reading.
            let requests = failing.requestCount(path: Self.downPath)
            let running = try count(db, "select count(*)::bigint from courier.jobs where destination = \(down) and state = 'running'")
            let attempts = try attempts(db, down)
            guard running == 0, failing.requestCount(path: Self.downPath) == requests else { return false }
            snapshot = (attempts, requests)
            return true
        }
        #expect(consistent)
        let attemptsBeforeRecovery = snapshot?.attempts ?? [:]
        let grants = try probeGrants(db, down, since: windowStart)
        let sentWhileOpen = (snapshot?.requests ?? 0) - requestsBeforeOpen
        var grown = 0
        var probedJobs = 0
        for (id, before) in attemptsAtOpen {
            let after = try #require(attemptsBeforeRecovery[id], "job \(id) left the queue while its destination was down")
            grown += after - before
            if after > before { probedJobs += 1 }
        }
        print("BreakerOutageTests: \(requestsBeforeOpen) requests before the trip; \(inWindow.count) in the 6 s window; "
              + "\(sentWhileOpen) requests, \(grown) attempts on \(probedJobs) job(s) and \(grants) probe grants before recovery")
        #expect(grown == sentWhileOpen, "only the probes used attempts (\(grown) attempts, \(sentWhileOpen) requests)")
        #expect(grown <= grants, "each probe grant sends at most one request (\(grown) attempts, \(grants) grants)")
        #expect(grown >= 2, "the breaker kept probing (cooldown 2 s, then up to 4 s)")
        #expect(try count(db, "select count(*)::bigint from courier.dead_letters") == 0)

        // 5. The destination recovers: the next probe closes the breaker and every job succeeds.
        failing.setBehavior(.json200, forPath: Self.downPath)
        let recovered = try await eventually(timeout: .seconds(90)) {
            try count(db, "select count(*)::bigint from courier.completed_jobs where destination = \(down)") == total
        }
        let stillWaiting = try attempts(db, down).count
        #expect(recovered, "all \(total) jobs succeed after recovery; still waiting: \(stillWaiting)")
        #expect(try breakerState(db, down) == "closed")
        let closes = try db.query("""
            select reason from courier.breaker_events where destination = \(down) and to_state = 'closed' order by id
            """).rows.map { try $0.decode(0, as: String.self) }
        #expect(closes == ["probe_succeeded"], "the breaker closed by a probe, once")
        #expect(try count(db, "select count(*)::bigint from courier.dead_letters") == 0, "none is dead-lettered")
        #expect(try count(db, "select count(*)::bigint from courier.jobs") == 0)
        let maxAttempt = try count(db, "select coalesce(max(attempt), 0)::bigint from courier.completed_jobs where destination = \(down)")
        #expect(maxAttempt < 10)

        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { #expect(worker.wait(timeout: .seconds(20)) == 0, "graceful exit:\n\(worker.output.suffix(1500))") }
    }

    @Test func aBacklogForAnOpenDestinationDoesNotStopAHealthyOne() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try database.connect()
        defer { db.close() }
        let dead = try FaultServer(defaultBehavior: .respond(status: 503, headers: [], body: "down"))
        defer { dead.stop() }
        let healthy = try FaultServer()
        defer { healthy.stop() }
        let deadDestination = "http://127.0.0.1:\(dead.port)"
        let healthyDestination = "http://127.0.0.1:\(healthy.port)"

        // 10k jobs wait for the dead destination when its breaker opens (they are held),
        // 10k more arrive while it is open (not held: the claim must skip them).
        let half = 10_000
        _ = try JobsTable.enqueueMany((0..<half).map { EnqueueRequest(url: dead.baseURL + "/hook?job=\($0)") }, on: db)
        let policy = BreakersTable.ReportPolicy(failureThreshold: 5, windowMilliseconds: 60_000, minimumVolume: 20, failureRate: 0.5,
                                                cooldownMilliseconds: 600_000, cooldownMaxMilliseconds: 600_000,
                                                probeLeaseMilliseconds: 30_000)
        #expect(try BreakersTable.report(destination: deadDestination, successes: 0, failures: 5, trailingFailures: 5,
                                         worker: "test", policy: policy, on: db) == "open")
        _ = try JobsTable.enqueueMany((half..<(2 * half)).map { EnqueueRequest(url: dead.baseURL + "/hook?job=\($0)") }, on: db)
        // The healthy jobs come last in claim order (same priority, later run_at and id).
        let healthyCount = 200
        _ = try JobsTable.enqueueMany((0..<healthyCount).map { EnqueueRequest(url: healthy.baseURL + "/ok?job=\($0)") }, on: db)

        let started = ContinuousClock.now
        let workers = try (0..<2).map { _ in
            try SpawnedProcess("jobworker", workerArguments(database.url, cooldown: "10m", cooldownMax: "10m"))
        }
        defer { workers.forEach { $0.cleanUp() } }
        let finished = try await eventually(timeout: .seconds(120)) {
            try count(db, "select count(*)::bigint from courier.completed_jobs where destination = \(healthyDestination)") == healthyCount
        }
        #expect(finished, "every healthy job finishes behind a backlog of \(2 * half) held jobs")
        print("BreakerOutageTests: \(healthyCount) healthy jobs behind \(2 * half) held ones drained in \(ContinuousClock.now - started) (2 workers, incl. start-up)")
        #expect(dead.requestCount() == 0, "nothing reached the dead destination")
        #expect(try count(db, "select count(*)::bigint from courier.jobs where destination = \(deadDestination) and state = 'available' and attempt = 0") == 2 * half,
                "the backlog waits with its attempts untouched")
        #expect(try breakerState(db, deadDestination) == "open")
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { #expect(worker.wait(timeout: .seconds(20)) == 0, "graceful exit:\n\(worker.output.suffix(1500))") }
    }
}
