import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Destination traffic control as users run it: three jobworker processes sharing one
/// database, against loopback receivers that record each request's start and end.
/// Correctness (the cap, rate + burst per second, pause) is asserted exactly; figures that
/// depend on the machine's load (mean in flight, achieved rate) only with generous bounds,
/// and printed.
@Suite(.serialized) struct TrafficFleetTests {
    func workerArguments(_ url: String) -> [String] {
        ["--database-url", url, "--allow-private-networks", "--concurrency", "16", "--lease", "10s",
         "--poll-interval", "200ms", "--backoff-base", "100ms", "--backoff-cap", "500ms", "--shutdown-grace", "5s"]
    }


    func completed(_ db: PostgresConnection, _ destination: String) throws -> Int {
        try db.query("select count(*)::bigint from courier.completed_jobs where destination = \(destination)")
            .rows[0].decode(0, as: Int.self)
    }

    func destination(of server: FaultServer) -> String { "http://127.0.0.1:\(server.port)" }

    /// The fleet's claim rounds, seen from outside the worker processes: `rounds` batches
    /// of jobs for `canary`, each finished before the next is enqueued, so the fleet has
    /// claimed that many times more since the call. "N rounds passed and still nothing
    /// happened" in place of a fixed sleep.
    func fleetClaimedAgain(_ db: PostgresConnection, canary: FaultServer, rounds: Int = 2) async throws -> Bool {
        let before = try completed(db, destination(of: canary))
        for round in 1...rounds {
            try TestRows(db).bulkJobs(5, url: canary.baseURL + "/canary", numbered: true)
            guard try await eventually(timeout: .seconds(60), every: .milliseconds(50), {
                try completed(db, destination(of: canary)) == before + 5 * round
            }) else { return false }
        }
        return true
    }

    func startWorkers(_ url: String) throws -> [SpawnedProcess] {
        try (0..<3).map { _ in try SpawnedProcess("jobworker", workerArguments(url)) }
    }

    func stop(_ workers: [SpawnedProcess]) async {
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { _ = await worker.waitForExit(timeout: .seconds(15)) }
    }

    @Test func theCapHoldsFleetWideIsFilledAndAHealthyDestinationIsNotHeldUp() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let capped = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(300), then: .json200))
        defer { capped.stop() }
        let healthy = try FaultServer(defaultBehavior: .json200)
        defer { healthy.stop() }
        let cap = 4
        _ = try DestinationsTable.merge(.init(destination: destination(of: capped), maxInFlight: cap, slowStartMilliseconds: 0), on: db)
        // The capped backlog first (older), then the healthy destination's jobs behind it.
        try TestRows(db).bulkJobs(100, url: capped.baseURL + "/capped", numbered: true)
        try TestRows(db).bulkJobs(20, url: healthy.baseURL + "/healthy", numbered: true)

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        let healthyDone = try await eventually(timeout: .seconds(60), every: .milliseconds(50)) {
            try completed(db, destination(of: healthy)) == 20
        }
        #expect(healthyDone)
        let cappedWhenHealthyDone = try completed(db, destination(of: capped))
        #expect(cappedWhenHealthyDone < 100, "the healthy destination finished behind the capped backlog, not after it")
        let allDone = try await eventually(timeout: .seconds(120), every: .milliseconds(100)) {
            try completed(db, destination(of: capped)) == 100
        }
        #expect(allDone)
        await stop(workers)

        let exchanges = capped.exchanges
        let peak = FaultServer.peakConcurrency(exchanges)
        let mean = FaultServer.meanConcurrencyWhileBusy(exchanges)
        print("traffic cap: cap \(cap), peak in flight \(peak), mean while busy \(String(format: "%.2f", mean)); capped jobs done when the healthy ones were: \(cappedWhenHealthyDone)/100")
        #expect(exchanges.count == 100)
        #expect(peak <= cap, "peak in flight \(peak) above the cap of \(cap)")
        #expect(peak == cap, "the cap is reached")
        #expect(mean >= Double(cap) * 0.5, "the cap is filled while jobs wait (mean \(mean))")
    }

    @Test func theRateHoldsInEverySecondAndIsSustained() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer(defaultBehavior: .json200)
        defer { server.stop() }
        let rate = 20.0
        let burst = 2
        _ = try DestinationsTable.merge(.init(destination: destination(of: server), ratePerSecond: rate, burst: burst), on: db)
        let total = 100
        try TestRows(db).bulkJobs(total, url: server.baseURL + "/rated", numbered: true)

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        let done = try await eventually(timeout: .seconds(90), every: .milliseconds(100)) {
            try completed(db, destination(of: server)) == total
        }
        #expect(done)
        await stop(workers)

        let starts = server.requests.map(\.arrivalNanos).sorted()
        #expect(starts.count == total)
        guard let first = starts.first, let last = starts.last, last > first else { return }
        let worstSecond = FaultServer.maxStartsInWindow(starts, window: 1_000_000_000)
        let achieved = Double(total - burst) / (Double(last - first) / 1e9)
        print("traffic rate: limit \(Int(rate))/s burst \(burst): most starts in any 1 s window \(worstSecond) (limit + burst = \(Int(rate) + burst)), achieved \(String(format: "%.2f", achieved))/s (\(String(format: "%+.1f", (achieved / rate - 1) * 100))%)")
        // The bucket bounds claims exactly; a request's start can trail its claim by the
        // worker's scheduling delay, so two extra starts are tolerated at the receiver.
        #expect(worstSecond <= Int(rate) + burst + 2, "\(worstSecond) starts in one second")
        #expect(achieved <= rate * 1.05 + 1, "achieved \(achieved)/s above the limit")
        #expect(achieved >= rate * 0.5, "achieved \(achieved)/s: the limit is used, not starved")
    }

    @Test func aPausedDestinationWaitsWithoutAttemptsAndResumeReleasesIt() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let paused = try FaultServer(defaultBehavior: .json200)
        defer { paused.stop() }
        let other = try FaultServer(defaultBehavior: .json200)
        defer { other.stop() }
        _ = try DestinationsTable.setPaused(destination: destination(of: paused), true, on: db)
        try TestRows(db).bulkJobs(30, url: paused.baseURL + "/paused", numbered: true)

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        // Other traffic flows meanwhile; once it has, the paused jobs have had every chance.
        try TestRows(db).bulkJobs(10, url: other.baseURL + "/other", numbered: true)
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(50)) { try completed(db, destination(of: other)) == 10 })
        #expect(try await fleetClaimedAgain(db, canary: other))
        #expect(paused.requestCount() == 0, "a paused destination gets no request")
        #expect(try db.query("select count(*)::bigint from courier.jobs where attempt > 0").rows[0].decode(0, as: Int.self) == 0,
                "waiting used no attempt")

        _ = try DestinationsTable.setPaused(destination: destination(of: paused), false, on: db)
        #expect(try await eventually(timeout: .seconds(60), every: .milliseconds(50)) { try completed(db, destination(of: paused)) == 30 })
        #expect(paused.requestCount() == 30)
        await stop(workers)
    }
}

extension TrafficFleetTests {
    @Test func afterABreakerClosesTheCapRampsFromOne() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(200), then: .json200))
        defer { server.stop() }
        let cap = 8
        let slowStart = 4.0
        _ = try DestinationsTable.merge(.init(destination: destination(of: server), maxInFlight: cap,
                                              slowStartMilliseconds: Int64(slowStart * 1000)), on: db)
        try BreakersTable.force(destination: destination(of: server), action: .open, on: db)
        try TestRows(db).bulkJobs(150, url: server.baseURL + "/ramp", numbered: true)

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        let canary = try FaultServer(defaultBehavior: .json200)
        defer { canary.stop() }
        #expect(try await fleetClaimedAgain(db, canary: canary))
        #expect(server.requestCount() == 0, "nothing is sent while the breaker is open")
        // Closing the breaker starts the ramp on the database's clock; the receiver's clock
        // starts here, a moment later, so the bound below errs on the generous side by that moment.
        let closedAt = FaultServer.monotonicNanos()
        try BreakersTable.force(destination: destination(of: server), action: .close, on: db)
        let done = try await eventually(timeout: .seconds(120), every: .milliseconds(100)) {
            try completed(db, destination(of: server)) == 150
        }
        #expect(done)
        await stop(workers)

        // At each request's start, the requests in flight stay within the ramp: 1 + (cap - 1) x elapsed / slow start.
        let exchanges = server.exchanges
        var worstExcess = Int.min
        var earlyPeak = 0
        for exchange in exchanges {
            let elapsed = Double(Int64(exchange.startNanos) - Int64(closedAt)) / 1e9 + 0.25
            let allowed = min(cap, 1 + Int(Double(cap - 1) * max(0, elapsed) / slowStart))
            let inFlight = exchanges.filter { $0.startNanos <= exchange.startNanos && $0.endNanos > exchange.startNanos }.count
            worstExcess = max(worstExcess, inFlight - allowed)
            if elapsed < 1.0 { earlyPeak = max(earlyPeak, inFlight) }
        }
        let peak = FaultServer.peakConcurrency(exchanges)
        print("traffic slow start: cap \(cap) over \(slowStart) s: in flight during the first ~0.75 s at most \(earlyPeak), peak \(peak), worst excess over the ramp \(worstExcess)")
        #expect(worstExcess <= 0, "in flight above the ramp by \(worstExcess)")
        #expect(peak <= cap)
        #expect(peak > earlyPeak, "it ramps up")
    }
}

extension TrafficFleetTests {
    /// Issue 40: `--slow-start` without `--max-in-flight` ramps too, from 1 up to the fleet's
    /// slots (3 workers x 16), instead of sending the whole backlog at once.
    @Test func afterABreakerClosesADestinationWithoutACapRampsToTheFleetsSlots() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer(defaultBehavior: .slow(delay: .milliseconds(200), then: .json200))
        defer { server.stop() }
        let slots = 3 * 16
        let slowStart = 4.0
        _ = try DestinationsTable.merge(.init(destination: destination(of: server), slowStartMilliseconds: Int64(slowStart * 1000)), on: db)
        try BreakersTable.force(destination: destination(of: server), action: .open, on: db)
        try TestRows(db).bulkJobs(300, url: server.baseURL + "/ramp", numbered: true)

        let workers = try startWorkers(database.url)
        defer { workers.forEach { $0.cleanUp() } }
        // Every worker registered (the fleet's slots are the live workers' concurrency).
        #expect(try await eventually(timeout: .seconds(30), every: .milliseconds(50)) {
            try db.query("select coalesce(sum(concurrency), 0)::bigint from courier.workers where stopping_at is null")
                .rows[0].decode(0, as: Int.self) == slots
        })
        let canary = try FaultServer(defaultBehavior: .json200)
        defer { canary.stop() }
        #expect(try await fleetClaimedAgain(db, canary: canary))
        #expect(server.requestCount() == 0, "nothing is sent while the breaker is open")
        let closedAt = FaultServer.monotonicNanos()
        try BreakersTable.force(destination: destination(of: server), action: .close, on: db)
        let done = try await eventually(timeout: .seconds(120), every: .milliseconds(100)) {
            try completed(db, destination(of: server)) == 300
        }
        #expect(done)
        await stop(workers)

        // At each request's start, the requests in flight stay within 1 + (slots - 1) x elapsed / slow start.
        let exchanges = server.exchanges
        var worstExcess = Int.min
        // The keeper releases the held jobs within a pass of the close: the first second of
        // requests starts at the first request.
        let firstStart = exchanges.map(\.startNanos).min() ?? 0
        var firstSecondPeak = 0
        for exchange in exchanges {
            let elapsed = Double(Int64(exchange.startNanos) - Int64(closedAt)) / 1e9 + 0.25
            let allowed = min(slots, 1 + Int(Double(slots - 1) * max(0, elapsed) / slowStart))
            let inFlight = exchanges.filter { $0.startNanos <= exchange.startNanos && $0.endNanos > exchange.startNanos }.count
            worstExcess = max(worstExcess, inFlight - allowed)
            if exchange.startNanos < firstStart + 1_000_000_000 { firstSecondPeak = max(firstSecondPeak, inFlight) }
        }
        let peak = FaultServer.peakConcurrency(exchanges)
        print("traffic slow start without a cap: \(slots) slots over \(slowStart) s: first request \(String(format: "%.2f", Double(Int64(firstStart) - Int64(closedAt)) / 1e9)) s after the close, in flight during its first second at most \(firstSecondPeak), peak \(peak), worst excess over the ramp \(worstExcess)")
        #expect(exchanges.count == 300)
        #expect(worstExcess <= 0, "in flight above the ramp by \(worstExcess)")
        #expect(firstSecondPeak < slots, "the first second is ramped, not the whole fleet's slots at once")
        #expect(peak > firstSecondPeak, "it ramps up")
    }
}
