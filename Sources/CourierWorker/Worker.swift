import CourierCore
import CourierStore
import Foundation

/// A `jobworker` process's runtime: leases jobs, runs them with bounded
/// concurrency, turns every outcome into one decision and writes it back fenced by
/// the lease; renews leases, rescues expired ones, and shuts down gracefully.
///
/// It is composed of small services, declared as one ``ServiceGraph`` (`makeServiceGraph()`
/// in Worker+Services.swift: the threads, and who wakes whom), started in order and stopped in reverse order:
/// Heartbeater, Completer, Listener, TrafficKeeper and Claimer each on a thread and
/// connection of its own; the light ones (BreakerReporter, StatsFlusher, Prober,
/// SettingsRefresher, Rescuer, Pruner, Reclaimer, Scheduler) in turn on one housekeeping thread and
/// connection (`ServiceBundle`): six connections in all, listed in ``databaseConnections``
/// (deploy/README.md, "Connection budget"). Jobs run as child tasks of one task group (`JobRunner`). Which jobs the
/// worker holds, and how far a shutdown has come, is one value, `WorkerStateMachine`,
/// changed only inside `withState`.
public final class Worker: @unchecked Sendable {
    public let id: UUID
    public let configuration: WorkerConfiguration
    /// The lease settings, worked out once from `configuration` and handed to every service that needs them.
    let leases: LeaseSettings
    let logger: Logger
    let metrics: WorkerMetrics
    let clock: WorkerClock

    private let handlers: Locked<[String: any JobHandler]>

    private let state: Locked<WorkerStateMachine>
    /// Woken whenever a job finishes or a shutdown is asked for.
    let stateChanged = ThreadSignal()

    private let random: Locked<any RandomNumberGenerator>

    let outage: OutageTracker
    let runner = JobRunner()

    // The services, in start order.
    var heartbeater: Heartbeater!
    var completer: Completer!
    var listener: Listener!
    var rescuer: Rescuer!
    var pruner: Pruner!
    var reclaimer: Reclaimer!
    var breakerReporter: BreakerReporter!
    var statsFlusher: StatsFlusher!
    var settings: SettingsRefresher!
    /// The fleet's destination traffic policies, read by the traffic keeper.
    let traffic = TrafficState()
    /// The destinations the fleet holds back, read by the traffic keeper; HTTP requests ask it last.
    let heldBack: HeldBackDestinations
    var prober: Prober!
    var scheduler: Scheduler?
    var claimer: Claimer!
    /// The attempts' spans and their exporter, when tracing is configured (`configuration.tracing`).
    let tracer: AttemptTracer?
    /// The destinations whose requests carry trace context, read by the settings refresher.
    let propagation = TracePropagation()

    /// The services and who wakes whom, as declared by `makeServiceGraph()` (Worker+Services.swift).
    private(set) var serviceGraph: ServiceGraph!
    /// The graph's threads, in start order.
    private(set) var services: ServiceThreads!
    /// What the worker itself wakes (installed by the graph).
    var wakes = Wakes()

    private let runLock = NSLock()
    private var stoppedContinuation: CheckedContinuation<Void, Never>?
    private var shutdownStarted = false
    private var fatalReason: String?
    /// The jobs this worker refused lately because of its own configuration (degraded or not).
    let refusalLedger = Locked(RefusalLedger())

    /// - Parameters:
    ///   - httpHandler: runs the built-in `http` kind (normally `HTTPJobHandler`); `noop` is
    ///     built in too, and other kinds are added with `register(kind:handler:)`.
    ///   - clock: the wall clock and monotonic clock the worker reads (tests inject one).
    ///   - random: the source of jitter (tests inject a seeded one).
    public init(configuration: WorkerConfiguration, httpHandler: any JobHandler, logger: Logger,
                metrics: WorkerMetrics = WorkerMetrics(), clock: WorkerClock = .system,
                random: any RandomNumberGenerator = SystemRandomNumberGenerator(), id: UUID = UUID()) {
        self.id = id
        self.configuration = configuration
        leases = LeaseSettings(configuration)
        self.logger = logger
        self.metrics = metrics
        self.clock = clock
        self.random = Locked(random)
        self.outage = OutageTracker(logger: logger, now: clock.now)
        self.state = Locked(WorkerStateMachine(concurrency: configuration.concurrency, fence: leases.fence))
        heldBack = HeldBackDestinations(now: clock.instant)
        if let tracing = configuration.tracing {
            let exporter = SpanExporter(configuration: tracing, resource: Self.traceResource(tracing, worker: id),
                                        metrics: metrics, logger: logger)
            tracer = AttemptTracer(spans: AttemptSpans(sampler: tracing.sampler, childOfEnqueue: tracing.childOfEnqueue),
                                   exporter: exporter)
        } else {
            tracer = nil
        }
        var handlers: [String: any JobHandler] = [:]
        if var http = httpHandler as? HTTPJobHandler {
            // The built-in handler withholds requests whose destination became held back after the claim.
            http.heldBack = heldBack
            handlers["http"] = http
        } else {
            handlers["http"] = httpHandler
        }
        handlers["noop"] = NoopJobHandler()
        self.handlers = Locked(handlers)
        let graph = makeServiceGraph()
        serviceGraph = graph
        // Every service but the claimer (which checks the schema) and the listener waits for the schema.
        services = graph.wire(clock: clock.instant, schemaReady: { [unowned self] in self.claimer.isSchemaReady })
    }

    /// The resource the worker's spans come from: the configured attributes, then the
    /// worker's own (its version, id, host and process) and the SDK's.
    static func traceResource(_ tracing: TracingConfiguration, worker: UUID) -> [SpanData.Attribute] {
        var resource = tracing.resource
        let own: [SpanData.Attribute] = [
            .init("service.version", .string(CourierVersion.current)),
            .init("service.instance.id", .string(worker.uuidString.lowercased())),
            .init("host.name", .string(ProcessInfo.processInfo.hostName)),
            .init("process.pid", .int(Int64(getpid()))),
            .init("telemetry.sdk.name", .string("courier")),
            .init("telemetry.sdk.language", .string("swift")),
            .init("telemetry.sdk.version", .string(CourierVersion.current)),
        ]
        for attribute in own where !resource.contains(where: { $0.key == attribute.key }) { resource.append(attribute) }
        return resource
    }

    /// Registers a handler for a job kind (enqueued with `courier.enqueue_job(kind, args)`). Call before `run`.
    public func register(kind: String, handler: any JobHandler) {
        handlers.withLock { $0[kind] = handler }
    }

    func handler(for kind: String) -> (any JobHandler)? { handlers.withLock { $0[kind] } }

    /// True once a graceful shutdown has begun.
    public var isStopping: Bool { withState { !$0.isRunning } }

    /// Jobs this worker holds right now.
    public var inFlightCount: Int { withState { $0.jobs.count } }

    /// Migrations this worker needs that the database lacks, as last checked; it claims
    /// nothing until they are applied (`jobctl migrate`).
    public var missingMigrations: [String] { claimer.missingMigrations }

    /// Whether the heartbeater proved this worker's leases recently enough to claim (see
    /// ``LeaseFence``); false before the first renewal and while the database is out of reach.
    public var leasesProven: Bool { withState { $0.fence.mayClaim(now: clock.instant()) } }

    /// Whether the database answered the last time any service asked.
    public var isDatabaseReachable: Bool { !outage.isDown }

    /// The shutdown phase and held jobs, as one value.
    public var stateSnapshot: WorkerStateMachine { withState { $0 } }

    func withState<T>(_ body: (inout WorkerStateMachine) -> T) -> T {
        state.withLock { body(&$0) }
    }

    func withRandom<T>(_ body: (inout any RandomNumberGenerator) -> T) -> T {
        random.withLock { body(&$0) }
    }

    /// Runs until `shutdown()` (or SIGTERM/SIGINT via `ShutdownSignals`) and the
    /// graceful shutdown completes.
    public func run() async {
        logger.info("worker starting", [
            ("worker", id.uuidString.lowercased()), ("queues", configuration.queues.joined(separator: ",")),
            ("concurrency", configuration.concurrency), ("lease", DurationParser.format(configuration.lease)),
        ])
        services.startAll()
        // The jobs' group: one task for the worker's life, on the worker's own threads (see
        // JobExecutor) or on the cooperative pool (`WorkerConfiguration.jobThreads`). It is not
        // awaited at the end, so a job that ignores its abort cannot keep the process from exiting.
        let executor = configuration.jobThreads == .own ? JobExecutor() : nil
        defer { executor?.stop() }
        let jobs = Task(executorPreference: executor) { [runner] in
            await runner.run(on: executor) { [weak self] lease in await self?.execute(lease) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            runLock.withLock { stoppedContinuation = continuation }
            startSupervisorThread()
        }
        if inFlightCount == 0 { await jobs.value }
        logger.info("worker stopped", [("worker", id.uuidString.lowercased())])
    }

    /// Begins a graceful shutdown: no new leases; in-flight jobs get the grace to
    /// finish; claimed jobs that have not started go back at once without using an
    /// attempt; what still runs after the grace is aborted and handed back.
    public func shutdown() {
        let first = runLock.withLock { () -> Bool in
            defer { shutdownStarted = true }
            return !shutdownStarted
        }
        guard first else { return }
        logger.info("shutdown requested", [("in_flight", inFlightCount), ("grace", DurationParser.format(configuration.shutdownGrace))])
        let actions = withState { $0.shutdownRequested(now: clock.instant(), grace: configuration.shutdownGrace) }
        perform(actions)
        stateChanged.signal()
    }

    /// Carries out what the state machine decided.
    func perform(_ actions: [WorkerStateMachine.Action]) {
        for action in actions {
            switch action {
            case .stopClaiming:
                wakes.stopClaiming()
            case .abort(let leases):
                if !leases.isEmpty { logger.warning("grace period over; aborting in-flight jobs", [("jobs", leases.count)]) }
                runner.cancel(leases)
            case .cancel(let leases):
                runner.cancel(leases)
            case .fence(let leases):
                logger.warning("cannot prove these leases (the database did not answer in time); aborting before another worker may take them",
                               [("jobs", leases.count), ("ids", leases.prefix(20).map { String($0.id) }.joined(separator: ","))])
                metrics.recordFenceAborts(leases.count)
                runner.cancel(leases)
            case .flush:
                stateChanged.signal()
            }
        }
    }

    /// The supervisor: waits for a shutdown, stops claiming, lets the state machine
    /// move through draining and aborting as deadlines pass, then stops the remaining
    /// services in reverse order and lets `run` return.
    private func startSupervisorThread() {
        let thread = Thread { [self] in
            ServiceThread.nameCurrentThread("courier-supervis")
            var fencedOff = false
            while !runLock.withLock({ shutdownStarted }) {
                fencedOff = fenceRound(wasFencedOff: fencedOff)
                stateChanged.wait(timeout: fenceWait())
            }
            // Claiming ends first: the claimer was started last. (The prober, in the housekeeping
            // thread, wins nothing once shutdown began: it probes only into free slots, and there are none.)
            services.stop([claimerThread])
            while true {
                let (phase, deadline) = withState { ($0.phase, $0.nextDeadline) }
                if phase == .flushing { break }
                let wait = deadline.map { max(.milliseconds(1), $0 - clock.instant()) } ?? .seconds(1)
                stateChanged.wait(timeout: min(wait, fenceWait()))
                perform(withState { $0.fenceCheck(now: clock.instant()) })
                perform(withState { $0.tick(now: clock.instant()) })
            }
            runner.finish()
            services.stop(services.all.filter { $0 !== claimerThread })
            withState { $0.stopped() }
            let continuation = runLock.withLock { () -> CheckedContinuation<Void, Never>? in
                defer { stoppedContinuation = nil }
                return stoppedContinuation
            }
            continuation?.resume()
        }
        thread.name = "courier-supervisor"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Aborts the jobs whose leases are no longer trusted and logs when claiming stops or
    /// resumes. Returns whether claiming is fenced off now.
    private func fenceRound(wasFencedOff: Bool) -> Bool {
        let now = clock.instant()
        let (actions, mayClaim, hasRenewed) = withState { state in
            (state.fenceCheck(now: now), state.fence.mayClaim(now: now), state.fence.lastRenewal != nil)
        }
        perform(actions)
        let fencedOff = hasRenewed && !mayClaim
        if fencedOff && !wasFencedOff {
            logger.warning("lease renewals have failed for too long: claiming nothing until the database answers again",
                           [("trusted_for", DurationParser.format(withState { $0.fence.trustedFor }))])
        } else if wasFencedOff && !fencedOff {
            logger.info("leases proven again: claiming resumes")
        }
        return fencedOff
    }

    /// How long the supervisor may wait before the next lease could stop being trusted.
    private func fenceWait() -> Duration {
        let now = clock.instant()
        let next = withState { state -> ContinuousClock.Instant? in
            let claimCutoff = state.fence.lastRenewal.map { $0 + state.fence.trustedFor }
            return [state.nextFenceDeadline, claimCutoff].compactMap { $0 }.filter { $0 > now }.min()
        }
        return next.map { max(.milliseconds(1), min($0 - now, Self.supervisorLongestWait)) } ?? Self.supervisorLongestWait
    }

    /// The longest the supervisor waits before it looks at the lease fence again.
    static let supervisorLongestWait: Duration = .seconds(1)

    /// Why the worker stopped on its own, when it did: a database setup that cannot work
    /// (a pooler in statement mode). `jobworker` then exits 1.
    public var fatalError: String? { runLock.withLock { fatalReason } }

    /// Logs the reason once and begins the graceful shutdown.
    func stopForGood(_ error: StoreError) {
        let first = runLock.withLock { () -> Bool in
            defer { if fatalReason == nil { fatalReason = error.description } }
            return fatalReason == nil
        }
        guard first else { return }
        logger.error("cannot work with this database connection; stopping", [("error", error.description)])
        shutdown()
    }

    var claimerThread: ServiceThread { services[claimer.name] }

    /// The `runOnce` rounds the service thread named `service` (one of
    /// ``databaseConnections``) has completed: tests wait on it (see ServiceThread).
    func completedRounds(of service: String) -> Int { services[service].completedRounds }

    /// The database connections one worker holds, whatever its concurrency: one per service
    /// thread, named by that thread, in start order (the heartbeater, completer, listener,
    /// housekeeping bundle, traffic keeper and claimer). The light services take turns on
    /// the housekeeping thread's connection. The metrics endpoint, when on, opens one more.
    /// deploy/README.md ("Connection budget") and docs/ state this count; tests hold them,
    /// the service graph and the live backends to it.
    public static let databaseConnections = [
        "courier-heartbeat", "courier-ack", "courier-listen", "courier-housekeep", "courier-traffic", "courier-claim",
    ]

    /// The service threads the graph built, in start order; each owns one connection.
    var serviceThreadNames: [String] { services.all.map(\.service.name) }
}

extension Worker: JobIntake {
    var freeSlots: Int { withState { $0.claimableSlots(now: clock.instant()) } }
    var heldCount: Int { withState { $0.jobs.count } }
    var slots: (free: Int, held: Int) { withState { ($0.claimableSlots(now: clock.instant()), $0.jobs.count) } }
    var busiestDestination: (destination: String, count: Int)? { withState { $0.busiestDestination } }

    func handBackUnknown(_ leases: [WorkerStateMachine.Lease]) {
        for lease in leases { completer.append(.handBack(id: lease.id, lease: lease.token)) }
        completer.wake()
    }

    func accept(_ jobs: [ClaimedJob], probeGeneration: Int64?, provenAt: ContinuousClock.Instant) {
        guard !jobs.isEmpty else { return }
        let now = clock.instant()
        // The supervisor looks at the fence at least every `supervisorLongestWait`: it is woken
        // only for leases trusted for less than that (not once per claim, which put a thread
        // wake-up beside every pickup).
        let (action, wakeSupervisor) = withState { state in
            (state.claimed(jobs, probeGeneration: probeGeneration, provenAt: provenAt, now: now),
             state.fence.expires(provenAt: provenAt, within: Self.supervisorLongestWait, of: now))
        }
        switch action {
        case .start(let leases):
            runner.submit(leases)
            if wakeSupervisor { stateChanged.signal() }
        case .handBack:
            // Shutdown began while the claim ran: back to the queue, no attempt used.
            for job in jobs { completer.append(.handBack(id: job.id, lease: job.lease)) }
            if let generation = probeGeneration, let job = jobs.first {
                completer.append(.probeAbandon(destination: job.destination, generation: generation))
            }
        }
    }
}

extension Worker: LeaseHolder {
    var heldIDs: [Int64] { withState { $0.heldIDs } }
    /// The jobs held, and the leases of results not yet written: both stay renewed until
    /// the result is in the database (DESIGN.md invariant 2).
    var heldLeases: [WorkerStateMachine.Lease] {
        let held = withState { $0.heldLeases }
        let unwritten = completer.unwrittenLeases
        guard !unwritten.isEmpty else { return held }
        return Array(Set(held).union(unwritten))
    }
    var heldProbes: [(destination: String, generation: Int64)] { withState { $0.heldProbes } }

    func leasesRenewed(_ renewed: [WorkerStateMachine.Lease], sentAt: ContinuousClock.Instant) {
        let resumed = withState { $0.leasesRenewed(renewed, sentAt: sentAt, now: clock.instant()) }
        if resumed { wakes.leasesResumed() }
    }

    func cancelRequested(_ ids: [Int64]) {
        guard !ids.isEmpty else { return }
        perform(withState { $0.cancelRequested(ids: ids) })
    }
}

/// The version string workers register with.
public enum CourierVersion {
    public static let current = "0.1.0"
}
