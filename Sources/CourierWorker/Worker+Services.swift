import CourierCore
import CourierStore
import Foundation

/// The worker's services, declared as one ``ServiceGraph``: what each thread runs, on which
/// connection, and who wakes whom. `Golden/service-graph.txt` holds its print.
extension Worker {
    /// What the worker itself wakes: hooks the service graph installs (see ``ServiceGraph/Event``).
    struct Wakes {
        /// A job finished and the free slots make a claim worthwhile (see ``ClaimTrigger``).
        var slotsFreed: @Sendable () -> Void = {}
        /// A renewal proved the leases again after claiming was fenced off.
        var leasesResumed: @Sendable () -> Void = {}
        /// A shutdown began: claiming stops.
        var stopClaiming: @Sendable () -> Void = {}
    }

    /// Builds the services, each with its own session, and declares the graph that runs
    /// them: six threads and six database connections (deploy/README.md, "Connection budget").
    /// Called once, from `init`; ``ServiceGraph/wire(clock:schemaReady:)`` does the wiring.
    func makeServiceGraph() -> ServiceGraph {
        var database = configuration.database
        if let keepalive = configuration.keepalive { database.keepalive = keepalive }
        let observer = outage.observer
        func session(_ gate: StopGate, responseTimeout: Duration? = nil, statementTimeout: Duration? = nil) -> StoreSession {
            var database = database
            database.responseTimeout = responseTimeout
            return StoreSession(configuration: database, statementTimeout: statementTimeout, observer: observer, pause: gate.pause,
                                onUnsupportedPoolMode: { [unowned self] in stopForGood($0) })
        }
        let registration = WorkersTable.Registration(
            id: id, host: ProcessInfo.processInfo.hostName, pid: Int(getpid()), queues: configuration.queues,
            concurrency: configuration.concurrency, version: CourierVersion.current,
            heartbeatIntervalMilliseconds: Int(leases.heartbeatInterval.milliseconds))
        var graph = ServiceGraph()

        // The span exporter, when tracing is configured: first, so it stops last and the
        // spans of the last jobs still go out. No database connection.
        if let exporter = tracer?.exporter {
            graph.nodes.append(.init(exporter, gate: StopGate(), needsSchema: false))
        }

        var gate = StopGate()
        // A renewal that waits (a frozen link, a lock) is worse than a retry on a fresh connection.
        heartbeater = Heartbeater(configuration: .init(leases: leases, registration: registration),
                                  session: session(gate, responseTimeout: leases.renewalTimeout, statementTimeout: leases.renewalTimeout),
                                  holder: self, metrics: metrics, clock: clock.instant)
        graph.nodes.append(.init(heartbeater, gate: gate))

        gate = StopGate()
        let breakerPolicy = configuration.breakerPolicy
        completer = Completer(configuration: .init(configuration, worker: id), session: session(gate), logger: logger,
                              metrics: metrics,
                              jitter: { [unowned self] in withRandom { breakerPolicy.cooldownJitterFactor(using: &$0) } },
                              clock: clock.instant)
        graph.nodes.append(.init(completer, gate: gate))

        gate = StopGate()
        // LISTEN on the --listen-database-url connection when given; a pooled connection
        // the operator did not name is not trusted with LISTEN (see ListenPlacement).
        let listenURLGiven = configuration.listenDatabase != nil
        var listenDatabase = configuration.listenDatabase ?? database
        if let keepalive = configuration.keepalive { listenDatabase.keepalive = keepalive }
        let listenSession = StoreSession(
            configuration: listenDatabase, channels: Listener.channels, observer: observer,
            pause: gate.pause, onUnsupportedPoolMode: { [unowned self] in stopForGood($0) },
            shouldListen: { ListenPlacement.decide(listenURLGiven: listenURLGiven, connectionIsPooled: $0) != .poll })
        listener = Listener(session: listenSession, listenURLGiven: listenURLGiven, pollInterval: configuration.pollInterval, logger: logger)
        graph.nodes.append(.init(listener, gate: gate, needsSchema: false))

        // The light services share one thread and one connection (see ServiceBundle): none
        // of them renews leases, claims or acknowledges.
        gate = StopGate()
        let housekeeping = session(gate)
        rescuer = Rescuer(configuration: .init(leases: leases), session: housekeeping, logger: logger, metrics: metrics)
        pruner = Pruner(configuration: .init(configuration), session: housekeeping)
        reclaimer = Reclaimer(session: housekeeping, logger: logger, mayRun: { [unowned self] in self.claimer.missingMigrations.isEmpty })
        breakerReporter = BreakerReporter(configuration: .init(configuration, worker: id), session: housekeeping, logger: logger,
                                          jitteredCooldown: { [unowned self] policy in
                                              withRandom { policy.jitteredCooldown(policy.cooldown, using: &$0) }
                                          })
        statsFlusher = StatsFlusher(session: housekeeping)
        settings = SettingsRefresher(base: configuration.retryPolicy, session: housekeeping, propagation: propagation)
        prober = Prober(configuration: .init(configuration, leases: leases, worker: id), session: housekeeping, intake: self, logger: logger)
        // In run order; they finish (final writes) in reverse: the breaker report and the statistics first.
        var members: [any WorkerService] = [breakerReporter, statsFlusher, prober, settings, rescuer, pruner, reclaimer]
        if configuration.scheduler.enabled {
            let scheduler = Scheduler(configuration: configuration.scheduler, session: housekeeping, logger: logger,
                                      metrics: metrics, mayRun: { [unowned self] in self.claimer.missingMigrations.isEmpty })
            self.scheduler = scheduler
            members.append(scheduler)
        }
        graph.nodes.append(.init(ServiceBundle(name: "courier-housekeep", members: members, clock: clock.instant), gate: gate))

        // The traffic keeper moves jobs in and out of held and gated states in bounded
        // batches, sometimes many in a row: on its own thread and connection, so a long
        // release never delays the breaker report or the scheduler.
        gate = StopGate()
        graph.nodes.append(.init(TrafficKeeper(session: session(gate), state: traffic, heldBack: heldBack, logger: logger), gate: gate))

        // Started last, so claiming ends first. A claim answered after its leases stopped being
        // trusted is handed back, so it waits no longer than that.
        gate = StopGate()
        claimer = Claimer(configuration: .init(configuration, leases: leases, worker: id),
                          session: session(gate, responseTimeout: leases.claimTimeout), intake: self,
                          completer: completer, settings: settings, logger: logger, metrics: metrics, traffic: traffic)
        graph.nodes.append(.init(claimer, gate: gate, needsSchema: false))

        // Who wakes whom. The hooks are set once here, before any thread starts.
        let (listener, completer, claimer, heartbeater, breakerReporter) = (listener!, completer!, claimer!, heartbeater!, breakerReporter!)
        func event(_ service: any WorkerService, _ name: String, _ install: @escaping (@escaping @Sendable () -> Void) -> Void) -> ServiceGraph.Event {
            ServiceGraph.Event(source: service.name, name: name, install: install)
        }
        func workerEvent(_ name: String, _ hook: WritableKeyPath<Wakes, @Sendable () -> Void>) -> ServiceGraph.Event {
            ServiceGraph.Event(source: ServiceGraph.workerSource, name: name, install: { [unowned self] in wakes[keyPath: hook] = $0 })
        }
        graph.edges = [
            .init(event(listener, "jobs arrived") { listener.jobsArrived = $0 }, wakes: .service(claimer.name),
                  told: ["noteJobsArrived", "noteNotification"],
                  tell: { [weak claimer] in claimer?.noteJobsArrived(); claimer?.noteNotification() }),
            .init(event(listener, "cancel announced") { listener.cancelAnnounced = $0 }, wakes: .service(heartbeater.name),
                  told: ["requestCancelCheck"], tell: { [weak heartbeater] in heartbeater?.requestCancelCheck() }),
            .init(event(completer, "result queued") { completer.wake = $0 }, wakes: .service(completer.name)),
            .init(event(completer, "jobs requeued") { completer.requeued = $0 }, wakes: .service(claimer.name)),
            .init(event(completer, "backlog cleared") { completer.backlogCleared = $0 }, wakes: .service(claimer.name)),
            .init(event(breakerReporter, "evidence trips a breaker") { breakerReporter.wake = $0 }, wakes: .service(breakerReporter.name)),
            .init(event(claimer, "schema ready") { claimer.onSchemaReady = $0 }, wakes: .everyService),
            .init(workerEvent("slots freed", \.slotsFreed), wakes: .service(claimer.name)),
            .init(workerEvent("leases resumed", \.leasesResumed), wakes: .service(claimer.name)),
            .init(workerEvent("stop claiming", \.stopClaiming), wakes: .service(heartbeater.name)),
        ]
        if let exporter = tracer?.exporter {
            graph.edges.append(.init(event(exporter, "batch full") { exporter.batchFull = $0 }, wakes: .service(exporter.name)))
        }
        return graph
    }
}
