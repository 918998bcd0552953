import CourierCore
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres

/// What one scenario measured.
struct ScenarioResult: Sendable {
    var mode: BreakerMode
    var fleet: Int
    /// First failed response after the outage began → first breaker open (fleet row, or the first process).
    var detectSeconds: Double?
    /// Per-process only: first failed response → the last process's breaker opened (nil if some never opened).
    var allOpenSeconds: Double?
    /// Requests reaching the dead destination per minute from detection (or the first failure) to recovery.
    var requestsPerMinuteWhileOpen: Double
    /// Requests reaching the destination during the whole outage.
    var outageRequests: Int
    /// Probes (half-open grants) from the outage's start until the breaker(s) closed again.
    var probes: Int?
    /// Failed attempts recorded in the jobs' histories (server errors and local rejections).
    var failedAttempts: Int
    /// Jobs enqueued, completed after the destination recovered, and dead-lettered.
    var enqueued: Int
    var completedAfterRecovery: Int
    var completed: Int
    var deadLettered: Int
    /// Recovery → no job left waiting (nil if the drain timed out).
    var drainSeconds: Double?
}

/// One run: a fleet of `fleet` in-process workers, jobs arriving at a steady rate
/// for one loopback destination, which answers 200, then 503 for the outage, then
/// 200 again.
struct Scenario {
    var mode: BreakerMode
    var fleet: Int
    var options: SimOptions

    static let path = "/hook"

    func run() async throws -> ScenarioResult {
        let database = try TestDatabase.create(label: "breaker_sim_\(mode.rawValue)_\(fleet)", template: nil,
                                               environment: [TestDatabase.environmentVariable: options.adminURL ?? ""])
        defer { try? database.drop() }
        let db = try database.connect(applicationName: "courier-breaker-sim")
        defer { db.close() }
        try Migrator.migrate(db)
        let server = try FaultServer()
        defer { server.stop() }
        let destination = "http://127.0.0.1:\(server.port)"

        // Workers.
        let recorder = SimRecorder()
        var workers: [Worker] = []
        for index in 0..<fleet {
            var configuration = WorkerConfiguration(database: database.configuration(applicationName: "sim-worker-\(index)"))
            configuration.concurrency = options.concurrency
            configuration.lease = .seconds(10)
            configuration.shutdownGrace = .seconds(2)
            configuration.pollInterval = .milliseconds(200)
            configuration.allowPrivateNetworks = true
            configuration.retryPolicy.backoff.base = options.backoffBase
            configuration.retryPolicy.backoff.cap = options.backoffCap
            configuration.breakerPolicy = options.breakerPolicy
            let handler: any JobHandler
            switch mode {
            case .shared:
                handler = LoopbackHTTPHandler()
            case .process:
                handler = LocalBreakerHandler(inner: LoopbackHTTPHandler(), policy: options.breakerPolicy, worker: index, recorder: recorder)
                configuration.breakerPolicy = Self.disabledFleetBreaker(options.breakerPolicy)
            case .none:
                handler = LoopbackHTTPHandler()
                configuration.breakerPolicy = Self.disabledFleetBreaker(options.breakerPolicy)
            }
            workers.append(Worker(configuration: configuration, httpHandler: handler,
                                  logger: Logger(level: .error, sink: { line in FileHandle.standardError.write(Data(line.utf8)) })))
        }
        let runs = workers.map { worker in Task.detached { await worker.run() } }

        // Load: `rate` jobs a second, from the warm-up until the destination recovers.
        let enqueuer = Enqueuer(url: database.url, target: server.baseURL + Self.path, rate: options.rate, maxAttempts: options.maxAttempts)
        enqueuer.start()

        try await Task.sleep(for: options.warmup)
        let outageStart = Date()
        server.setBehavior(.respond(status: 503, headers: [], body: "down"), forPath: Self.path)
        try await Task.sleep(for: options.outage)
        let recoveredAt = Date()
        server.setBehavior(.json200, forPath: Self.path)
        let enqueued = enqueuer.stop()

        // Drain: every job has succeeded or been dead-lettered.
        var drainedAt: Date?
        let drainEnd = ContinuousClock.now + options.drainTimeout
        while ContinuousClock.now < drainEnd {
            if try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0 {
                drainedAt = Date()
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        for worker in workers { worker.shutdown() }
        for run in runs { await run.value }

        // Measure.
        let requests = server.requests.filter { $0.pathWithoutQuery == Self.path }
        let firstFailure = requests.first { $0.arrivedAt >= outageStart }?.arrivedAt ?? outageStart
        var detectedAt: Date?
        var allOpenAt: Date?
        var probes: Int?
        switch mode {
        case .shared:
            let events = try db.query("""
                select at, to_state, reason from courier.breaker_events where destination = \(destination) order by id
                """).rows.map { (try $0.decode(0, as: Date.self), try $0.decode(1, as: String.self), try $0.decode(2, as: String.self)) }
            detectedAt = events.first { $0.1 == "open" && $0.0 >= outageStart }?.0
            let closedAt = events.first { $0.2 == "probe_succeeded" && $0.0 >= recoveredAt }?.0 ?? .distantFuture
            probes = events.filter { $0.1 == "half_open" && $0.0 >= outageStart && $0.0 <= closedAt }.count
        case .process:
            let entries = recorder.all.filter { $0.transition.at >= outageStart }
            var firstOpen: [Int: Date] = [:]
            for e in entries where e.transition.to == .open && e.transition.reason != .probeFailed {
                firstOpen[e.worker] = min(firstOpen[e.worker] ?? .distantFuture, e.transition.at)
            }
            detectedAt = firstOpen.values.min()
            allOpenAt = firstOpen.count == fleet ? firstOpen.values.max() : nil
            probes = entries.filter { $0.transition.to == .halfOpen }.count
        case .none:
            break
        }
        let openFrom = detectedAt ?? firstFailure
        let whileOpen = requests.filter { $0.arrivedAt >= openFrom && $0.arrivedAt < recoveredAt }.count
        let openMinutes = max(recoveredAt.timeIntervalSince(openFrom), 0.001) / 60
        let count = { (sql: PostgresQuery) throws -> Int in try db.query(sql).rows[0].decode(0, as: Int.self) }
        return ScenarioResult(
            mode: mode, fleet: fleet,
            detectSeconds: detectedAt.map { $0.timeIntervalSince(firstFailure) },
            allOpenSeconds: allOpenAt.map { $0.timeIntervalSince(firstFailure) },
            requestsPerMinuteWhileOpen: Double(whileOpen) / openMinutes,
            outageRequests: requests.filter { $0.arrivedAt >= outageStart && $0.arrivedAt < recoveredAt }.count,
            probes: probes,
            failedAttempts: try count("""
                select (coalesce((select sum(jsonb_array_length(errors)) from courier.jobs), 0)
                      + coalesce((select sum(jsonb_array_length(errors)) from courier.completed_jobs), 0)
                      + coalesce((select sum(jsonb_array_length(errors)) from courier.dead_letters), 0))::bigint
                """),
            enqueued: enqueued,
            completedAfterRecovery: try count("select count(*)::bigint from courier.completed_jobs where finished_at >= \(recoveredAt)"),
            completed: try count("select count(*)::bigint from courier.completed_jobs"),
            deadLettered: try count("select count(*)::bigint from courier.dead_letters"),
            drainSeconds: drainedAt.map { $0.timeIntervalSince(recoveredAt) })
    }

    /// A fleet breaker that never trips, for the per-process and no-breaker runs.
    static func disabledFleetBreaker(_ policy: BreakerPolicy) -> BreakerPolicy {
        var p = policy
        p.failureThreshold = 1_000_000
        p.minimumVolume = 1_000_000
        return p
    }
}

/// Enqueues jobs at a steady rate on its own thread and connection.
final class Enqueuer: @unchecked Sendable {
    private let url: String
    private let target: String
    private let rate: Int
    private let maxAttempts: Int
    private let lock = NSLock()
    private var stopping = false
    private var count = 0
    private let done = DispatchSemaphore(value: 0)

    init(url: String, target: String, rate: Int, maxAttempts: Int) {
        self.url = url
        self.target = target
        self.rate = rate
        self.maxAttempts = maxAttempts
    }

    func start() {
        let thread = Thread { [self] in
            defer { done.signal() }
            guard let db = try? PostgresConnection.connect(PostgresConfiguration(connectionString: url, applicationName: "sim-enqueuer")) else {
                FileHandle.standardError.write(Data("courier-breaker-sim: the enqueuer cannot connect\n".utf8))
                return
            }
            defer { db.close() }
            let interval = Duration.seconds(1) / rate
            var next = ContinuousClock.now
            var index = 0
            while !lock.withLock({ stopping }) {
                var request = EnqueueRequest(url: target + "?job=\(index)")
                request.method = "GET"
                request.maxAttempts = maxAttempts
                if (try? JobsTable.enqueue(request, on: db)) != nil {
                    index += 1
                    lock.withLock { count = index }
                }
                next += interval
                let wait = next - ContinuousClock.now
                if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds)) }
            }
        }
        thread.name = "sim-enqueuer"
        thread.start()
    }

    /// Stops and returns how many jobs were enqueued.
    func stop() -> Int {
        lock.withLock { stopping = true }
        done.wait()
        return lock.withLock { count }
    }
}
