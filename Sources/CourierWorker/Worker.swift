import CourierCore
import CourierStore
import Foundation
import Postgres

/// A `jobworker` process's runtime: leases jobs, runs them with bounded
/// concurrency, turns every outcome into one decision and writes it back fenced by
/// the lease; renews leases, rescues expired ones, and shuts down gracefully.
///
/// The database loops (claim, acknowledge, maintenance, listen) each own a dedicated
/// thread and connection, because libpq calls block; jobs themselves run as Swift
/// tasks, so a slow request holds no thread.
public final class Worker: @unchecked Sendable {
    public let id = UUID()
    public let configuration: WorkerConfiguration
    let logger: Logger
    let metrics: WorkerMetrics
    private var handlers: [String: any JobHandler] = [:]

    // State shared by the threads and the job tasks, guarded by `lock`.
    private let lock = NSLock()
    private var stopping = false
    private var inFlight: [Int64: InFlightJob] = [:]
    private var random = SystemRandomNumberGenerator()
    /// Breaker evidence per destination since the last report, and when this worker
    /// last reported failures for it (pure-success evidence is only worth a write
    /// while failures are being counted).
    private var evidence: [String: BreakerEvidence] = [:]
    private var lastFailureReport: [String: ContinuousClock.Instant] = [:]
    /// Attempt counts not yet added to `courier.attempt_stats`.
    private var attemptCounts: [AttemptStatsTable.Key: AttemptStatsTable.Counts] = [:]
    private var queuePolicies: QueuePolicies
    /// The earliest time a job this worker retried falls due: the claim loop wakes
    /// then instead of waiting for the next poll, so short backoffs stay short.
    private var nextRetryDue: ContinuousClock.Instant?

    private let acknowledgements = AcknowledgementBuffer()
    private let claimSignal = ThreadSignal()
    private let ackSignal = ThreadSignal()
    private let maintenanceSignal = ThreadSignal()
    private let outage: OutageTracker
    private var threads: [Thread] = []
    private let finished = DispatchGroup()
    private var shutdownStarted = false

    struct InFlightJob {
        var job: ClaimedJob
        var task: Task<Void, Never>?
        var started = false
        var cancelledByOperator = false
        var abortedByShutdown = false
        /// Set when this job is its destination's half-open probe.
        var probeGeneration: Int64?
    }

    /// - Parameters:
    ///   - handlers: job kinds besides `http` and `noop`; more can be added with `register`.
    public init(configuration: WorkerConfiguration, httpHandler: any JobHandler, logger: Logger,
                metrics: WorkerMetrics = WorkerMetrics()) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.outage = OutageTracker(logger: logger)
        self.queuePolicies = QueuePolicies(base: configuration.retryPolicy)
        handlers["http"] = httpHandler
        handlers["noop"] = NoopJobHandler()
    }

    /// Registers a handler for a job kind (enqueued with `courier.enqueue_job(kind, args)`). Call before `run`.
    public func register(kind: String, handler: any JobHandler) {
        lock.withLock { handlers[kind] = handler }
    }

    /// True once a graceful shutdown has begun.
    public var isStopping: Bool { lock.withLock { stopping } }

    /// Jobs this worker holds right now.
    public var inFlightCount: Int { lock.withLock { inFlight.count } }

    /// Whether the database answered the last time any loop asked.
    public var isDatabaseReachable: Bool { !outage.isDown }

    /// Runs until `shutdown()` (or SIGTERM/SIGINT via `ShutdownSignals`) and the
    /// graceful shutdown completes.
    public func run() async {
        logger.info("worker starting", [
            ("worker", id.uuidString.lowercased()), ("queues", configuration.queues.joined(separator: ",")),
            ("concurrency", configuration.concurrency), ("lease", DurationParser.format(configuration.lease)),
        ])
        startThread("courier-claim", claimLoop)
        startThread("courier-ack", acknowledgeLoop)
        startThread("courier-maintenance", maintenanceLoop)
        startThread("courier-listen", listenLoop)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finished.notify(queue: .global()) { continuation.resume() }
        }
        logger.info("worker stopped", [("worker", id.uuidString.lowercased())])
    }

    /// Begins a graceful shutdown: no new leases; in-flight jobs get the grace to
    /// finish; claimed jobs that have not started go back at once without using an
    /// attempt; what still runs after the grace is aborted and handed back.
    public func shutdown() {
        let first = lock.withLock { () -> Bool in
            defer { stopping = true; shutdownStarted = true }
            return !shutdownStarted
        }
        guard first else { return }
        logger.info("shutdown requested", [("in_flight", inFlightCount), ("grace", DurationParser.format(configuration.shutdownGrace))])
        claimSignal.signal()
        maintenanceSignal.signal()
    }

    private func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        finished.enter()
        let thread = Thread { [finished] in
            body()
            finished.leave()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        threads.append(thread)
        thread.start()
    }

    private func makeSession(channels: [String] = []) -> DatabaseSession {
        DatabaseSession(configuration: configuration.database, outage: outage, logger: logger, channels: channels,
                        shouldStop: { [weak self] in self?.isStopping ?? true })
    }

    // MARK: - Claiming

    private func claimLoop() {
        let session = makeSession()
        defer { session.close() }
        let queues = configuration.queues
        var next = 0
        let fullBatch = min(configuration.claimBatch, configuration.concurrency)
        // Per-queue retry settings before the first claim; the maintenance thread refreshes them.
        if case .success(let rows) = session.run({ try QueueSettingsTable.all(on: $0) }) {
            lock.withLock { queuePolicies.update(rows) }
        }
        while !isStopping {
            let (free, running) = lock.withLock { (configuration.concurrency - inFlight.count, inFlight.count) }
            // Batch claims while busy; claim at once when idle so pickup stays fast.
            let threshold = running == 0 ? 1 : max(1, fullBatch / 2)
            let backlog = acknowledgements.count > configuration.ackBatch * 4
            var claimedFull = false
            if free >= threshold && !backlog {
                var triedQueues = 0
                while triedQueues < queues.count && !isStopping {
                    let queue = queues[next % queues.count]
                    next += 1
                    triedQueues += 1
                    let want = min(configuration.concurrency - inFlightCount, configuration.claimBatch)
                    guard want > 0 else { break }
                    let result = session.run { connection in
                        try JobsTable.claim(queue: queue, limit: want, worker: self.id,
                                            leaseMilliseconds: Int(configuration.lease.milliseconds), on: connection)
                    }
                    guard case .success(let jobs) = result else { break }
                    metrics.recordClaim(batch: jobs.count)
                    start(jobs)
                    if jobs.count == want { claimedFull = true; break }
                }
            }
            if claimedFull { continue }
            claimSignal.wait(timeout: nextClaimWait())
        }
    }

    /// How long the claim loop may sleep: the poll interval, or less when a retry
    /// this worker scheduled falls due sooner.
    private func nextClaimWait() -> Duration {
        lock.withLock {
            guard let due = nextRetryDue else { return configuration.pollInterval }
            let now = ContinuousClock.now
            if due <= now {
                nextRetryDue = nil
                return .milliseconds(1)
            }
            return min(configuration.pollInterval, due - now + .milliseconds(5))
        }
    }

    private func start(_ jobs: [ClaimedJob], probeGeneration: Int64? = nil) {
        guard !jobs.isEmpty else { return }
        lock.withLock {
            for job in jobs { inFlight[job.id] = InFlightJob(job: job, probeGeneration: probeGeneration) }
        }
        for job in jobs {
            let task = Task { [self] in await self.execute(job) }
            lock.withLock { inFlight[job.id]?.task = task }
        }
    }

    // MARK: - Executing

    /// Marks a job started, unless shutdown began first (then it goes back unstarted).
    private func begin(_ id: Int64) -> Bool {
        lock.withLock {
            guard !stopping, inFlight[id] != nil else { return false }
            inFlight[id]?.started = true
            return true
        }
    }

    private func execute(_ job: ClaimedJob) async {
        guard begin(job.id) else {
            acknowledge(.handBack(id: job.id, attempt: job.attempt))
            finish(job.id)
            return
        }
        let startedAt = Date()
        let clock = ContinuousClock.now
        let classification: Classification
        if let deadline = job.deadline, deadline <= startedAt {
            classification = Classification(succeeded: false, errorClass: nil, message: "the deadline passed before the attempt",
                                            mayHaveBeenDelivered: false, retryable: false)
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, reason: DeadLetterReason.deadline.rawValue,
                                          errorJSON: nil, lastClass: nil, lastStatus: nil)))
            metrics.recordDeadLetter(reason: .deadline)
            logJob(job, "job dead-lettered", classification, [("reason", "deadline")])
            finish(job.id)
            return
        } else if job.cancelRequested {
            classification = Classification(succeeded: false, errorClass: .cancelled, message: "cancelled by an operator",
                                            mayHaveBeenDelivered: false, retryable: false)
        } else if let handler = lock.withLock({ handlers[job.kind] }) {
            classification = await handler.perform(job)
        } else {
            classification = Classification(succeeded: false, errorClass: .client,
                                            message: "no handler is registered for job kind '\(job.kind)'",
                                            mayHaveBeenDelivered: false, retryable: false)
        }
        let elapsed = ContinuousClock.now - clock
        let flags = lock.withLock { inFlight[job.id].map { ($0.cancelledByOperator, $0.abortedByShutdown, $0.probeGeneration) } }
            ?? (false, false, nil)
        if let generation = flags.2 {
            if flags.0 || flags.1 || classification.errorClass == .cancelled {
                // Cancelled or aborted at shutdown: the probe says nothing about the destination.
                acknowledge(.probeAbandon(destination: job.destination, generation: generation))
            } else {
                // The verdict: the destination answered in a way that is not a breaker failure.
                let healthy = classification.succeeded
                    || (!classification.countsAsBreakerFailure && classification.errorClass != .throttled)
                acknowledge(.probeResult(destination: job.destination, generation: generation, succeeded: healthy))
            }
        } else if !flags.0 && !flags.1 {
            noteEvidence(job.destination, classification)
        }
        record(job, classification, startedAt: startedAt, elapsed: elapsed,
               cancelledByOperator: flags.0, abortedByShutdown: flags.1)
        finish(job.id)
    }

    private func finish(_ id: Int64) {
        lock.withLock { _ = inFlight.removeValue(forKey: id) }
        claimSignal.signal()
    }

    private func acknowledge(_ item: Acknowledgement) {
        acknowledgements.append(item)
        ackSignal.signal()
    }

    /// Turns one attempt's classification into its decision and queues the write.
    private func record(_ job: ClaimedJob, _ classification: Classification, startedAt: Date, elapsed: Duration,
                        cancelledByOperator: Bool, abortedByShutdown: Bool) {
        let durationMs = Int(elapsed.milliseconds)
        metrics.recordAttempt(classification)
        let statsKey = AttemptStatsTable.Key(queue: job.queue, destination: job.destination,
                                             errorClass: classification.succeeded ? "success" : (classification.errorClass?.rawValue ?? "unknown"))
        lock.withLock {
            attemptCounts[statsKey, default: .init()].attempts += 1
            if classification.succeeded && job.attempt > 1 { attemptCounts[statsKey, default: .init()].succeededAfterRetry += 1 }
        }
        if classification.succeeded {
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, status: classification.status, durationMilliseconds: durationMs)))
            metrics.recordSuccess(afterRetry: job.attempt > 1)
            if logger.isEnabled(.debug) { logJob(job, "job succeeded", classification, [("duration_ms", durationMs)]) }
            return
        }
        let facts = JobRetryFacts(method: job.method, hasIdempotencyKey: job.idempotencyKey != nil, attempt: job.attempt,
                                  maxAttempts: job.maxAttempts, deadline: job.deadline,
                                  previousDelay: job.lastDelayMilliseconds.map { .milliseconds($0) })
        var effective = classification
        let decision: JobDecision
        if cancelledByOperator {
            effective.errorClass = .cancelled
            effective.message = "cancelled by an operator while running: " + classification.message
            decision = .deadLetter(.cancelled)
        } else if abortedByShutdown {
            // The request was aborted mid-flight: it may have been delivered.
            effective.errorClass = .cancelled
            effective.message = "aborted at shutdown after the grace period; the request may have been sent"
            if !facts.isSafeToRepeat {
                decision = .deadLetter(.ambiguous)
            } else if job.attempt >= job.maxAttempts {
                decision = .deadLetter(.exhausted)
            } else {
                decision = .retry(at: Date(), delay: .zero, destinationNotBefore: nil)
            }
        } else {
            decision = lock.withLock {
                RetryDecider.decide(classification, job: facts, policy: queuePolicies.policy(for: job.queue), now: Date(), rng: &random)
            }
        }
        let error = attemptJSON(job, effective, startedAt: startedAt, durationMs: durationMs)
        switch decision {
        case .succeed:
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, status: classification.status, durationMilliseconds: durationMs)))
        case .retry(_, let delay, let notBefore):
            if let notBefore {
                let pause = max(Int64(0), Int64(notBefore.timeIntervalSinceNow * 1000))
                acknowledge(.destinationPause(destination: job.destination, milliseconds: pause))
            }
            acknowledge(.retry(.init(id: job.id, attempt: job.attempt, delayMilliseconds: Int64(delay.milliseconds), errorJSON: error)))
            metrics.recordRetry(delay: delay)
            lock.withLock {
                attemptCounts[statsKey, default: .init()].addRetry(delayMilliseconds: Int64(delay.milliseconds))
                let due = ContinuousClock.now + delay
                nextRetryDue = nextRetryDue.map { min($0, due) } ?? due
            }
            logJob(job, "attempt failed; retrying", effective, [("retry_in", DurationParser.format(delay))])
        case .deadLetter(let reason):
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, reason: reason.rawValue, errorJSON: error,
                                          lastClass: effective.errorClass?.rawValue, lastStatus: effective.status)))
            metrics.recordDeadLetter(reason: reason)
            logJob(job, "job dead-lettered", effective, [("reason", reason.rawValue)])
        }
    }

    private func attemptJSON(_ job: ClaimedJob, _ c: Classification, startedAt: Date, durationMs: Int) -> String {
        var object: [String: Any] = [
            "attempt": job.attempt,
            "class": c.errorClass?.rawValue ?? "unknown",
            "message": c.message,
            "started_at": Timestamp.format(startedAt),
            "duration_ms": durationMs,
            "worker": id.uuidString.lowercased(),
        ]
        if let status = c.status { object["status"] = status }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private func logJob(_ job: ClaimedJob, _ message: String, _ c: Classification, _ extra: [(String, any Sendable)] = []) {
        var fields: [(String, any Sendable)] = [
            ("job", job.id), ("queue", job.queue), ("destination", job.destination), ("attempt", job.attempt),
            ("class", c.errorClass?.rawValue ?? "none"),
        ]
        if let status = c.status { fields.append(("status", status)) }
        fields.append(("detail", c.message))
        fields += extra
        logger.log(c.succeeded ? .debug : .info, message, fields)
    }

    // MARK: - Breaker evidence and probes

    private func noteEvidence(_ destination: String, _ classification: Classification) {
        guard classification.succeeded || classification.countsAsBreakerFailure else { return }
        let tripsAlone = lock.withLock { () -> Bool in
            evidence[destination, default: BreakerEvidence()].record(classification)
            return evidence[destination]!.wouldTrip(configuration.breakerPolicy)
        }
        // Our own evidence would open the breaker: report now, not at the next tick.
        if tripsAlone { maintenanceSignal.signal() }
    }

    var reportPolicy: BreakersTable.ReportPolicy {
        let p = configuration.breakerPolicy
        return BreakersTable.ReportPolicy(
            failureThreshold: p.failureThreshold, windowMilliseconds: Int64(p.window.milliseconds),
            minimumVolume: p.minimumVolume, failureRate: p.failureRateThreshold,
            cooldownMilliseconds: Int64(p.cooldown.milliseconds), cooldownMaxMilliseconds: Int64(p.cooldownMax.milliseconds),
            probeLeaseMilliseconds: Int64(p.probeLease.milliseconds))
    }

    /// Writes the evidence gathered since the last report, one call per destination.
    private func reportEvidence(session: DatabaseSession) {
        let now = ContinuousClock.now
        let window = configuration.breakerPolicy.window
        let batch = lock.withLock { () -> [(String, BreakerEvidence)] in
            var due: [(String, BreakerEvidence)] = []
            for (destination, gathered) in evidence {
                let recentlyFailing = lastFailureReport[destination].map { now - $0 < window } ?? false
                if gathered.failures > 0 || recentlyFailing {
                    due.append((destination, gathered))
                    if gathered.failures > 0 { lastFailureReport[destination] = now }
                }
            }
            evidence.removeAll(keepingCapacity: true)
            lastFailureReport = lastFailureReport.filter { now - $0.value < window }
            return due
        }
        guard !batch.isEmpty else { return }
        let policy = reportPolicy
        let worker = id.uuidString.lowercased()
        _ = session.run { connection in
            for (destination, gathered) in batch {
                let state = try BreakersTable.report(
                    destination: destination, successes: gathered.successes, failures: gathered.failures,
                    trailingFailures: gathered.consecutiveFailures, worker: worker, policy: policy, on: connection)
                if state == "open" && gathered.failures > 0 {
                    self.logger.debug("breaker evidence reported", [("destination", destination), ("failures", gathered.failures), ("state", state)])
                }
            }
        }
    }

    /// Wins and runs probes for destinations whose cooldown is over: exactly one
    /// worker in the fleet gets each probe.
    private func runDueProbes(session: DatabaseSession) {
        guard !isStopping, inFlightCount < configuration.concurrency else { return }
        guard case .success(let due) = session.run({ try BreakersTable.dueForProbe(queues: self.configuration.queues, on: $0) }),
              !due.isEmpty else { return }
        let policy = reportPolicy
        for destination in due.shuffled() {
            let result = session.run { connection -> (Int64, ClaimedJob?)? in
                guard let generation = try BreakersTable.tryProbe(destination: destination, worker: self.id,
                                                                  probeLeaseMilliseconds: policy.probeLeaseMilliseconds,
                                                                  on: connection) else { return nil }
                let job = try JobsTable.claimProbe(destination: destination, generation: generation,
                                                   queues: self.configuration.queues, worker: self.id,
                                                   leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: connection)
                return (generation, job)
            }
            guard case .success(let won?) = result else { continue }
            guard let job = won.1 else {
                // Won, but the job went elsewhere meanwhile: give the probe back rather than stall the breaker.
                _ = session.run { try BreakersTable.abandonProbe(destination: destination, generation: won.0,
                                                                 worker: self.id.uuidString.lowercased(), on: $0) }
                continue
            }
            logger.info("breaker half-open; probing", [("job", job.id), ("queue", job.queue), ("destination", destination),
                                                        ("attempt", job.attempt), ("class", "none"), ("generation", won.0)])
            start([job], probeGeneration: won.0)
        }
    }

    // MARK: - Acknowledging

    private func acknowledgeLoop() {
        let session = makeSession()
        defer { session.close() }
        while true {
            ackSignal.wait(timeout: .milliseconds(100))
            let done = lock.withLock { stopping && inFlight.isEmpty }
            if acknowledgements.count > 0 && acknowledgements.count < configuration.ackBatch && !done {
                // Give a batch a moment to fill: one statement for many jobs.
                Thread.sleep(forTimeInterval: Double(configuration.ackFlushInterval.milliseconds) / 1000)
            }
            while acknowledgements.count > 0 {
                let batch = acknowledgements.take(limit: configuration.ackBatch)
                let started = ContinuousClock.now
                let policy = reportPolicy
                let spread = configuration.breakerPolicy.cooldownJitter
                let jitter = lock.withLock { Double.random(in: (1 - spread)...(1 + spread), using: &random) }
                let result = session.run { connection in
                    try Acknowledgement.write(batch, worker: self.id, breakerPolicy: policy, jitter: jitter, on: connection)
                }
                if case .failure = result {
                    acknowledgements.putBack(batch)
                    if done && lock.withLock({ ackGiveUp }) { return }
                    break
                }
                metrics.recordAckFlush(count: batch.count, latency: ContinuousClock.now - started)
                // Retried or handed-back jobs are in the queue again: let the claim loop look.
                if batch.contains(where: { if case .retry = $0 { true } else if case .handBack = $0 { true } else { false } }) {
                    claimSignal.signal()
                }
            }
            if done && acknowledgements.count == 0 && lock.withLock({ drained }) { return }
        }
    }

    private var drained = false
    private var ackGiveUp = false

    // MARK: - Maintenance: heartbeats, lease renewal, cancellation, rescue, pruning

    private func maintenanceLoop() {
        let session = makeSession()
        defer { session.close() }
        let registration = WorkersTable.Registration(
            id: id, host: ProcessInfo.processInfo.hostName, pid: Int(getpid()), queues: configuration.queues,
            concurrency: configuration.concurrency, version: CourierVersion.current,
            heartbeatIntervalMilliseconds: Int(configuration.heartbeatInterval.milliseconds))
        var registered = false
        var lastHeartbeat = ContinuousClock.now - .seconds(3600)
        var lastRescue = ContinuousClock.now - .seconds(3600)
        var lastPrune = ContinuousClock.now
        var lastCancelCheck = ContinuousClock.now
        var lastStatsFlush = ContinuousClock.now
        var lastSettingsRead = ContinuousClock.now - .seconds(3600)
        let rescueInterval = max(.seconds(1), min(configuration.lease / 4, .seconds(15)))
        while !isStopping {
            let now = ContinuousClock.now
            if !registered {
                if case .success = session.run({ try WorkersTable.register(registration, on: $0) }) { registered = true }
            }
            let held = lock.withLock { Array(inFlight.keys) }
            if now - lastHeartbeat >= configuration.heartbeatInterval {
                let result = session.run { connection -> [Int64] in
                    if !(try WorkersTable.heartbeat(id: self.id, stopping: false, on: connection)) {
                        try WorkersTable.register(registration, on: connection)
                    }
                    return try JobsTable.extendLeases(ids: held, worker: self.id,
                                                      leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: connection)
                }
                if case .success(let cancelled) = result {
                    lastHeartbeat = now
                    cancelRunning(cancelled)
                }
            } else if !held.isEmpty && now - lastCancelCheck >= .seconds(1) {
                lastCancelCheck = now
                // Cancellation reaches a running job within a second even if a NOTIFY was missed.
                if case .success(let cancelled) = session.run({ try JobsTable.cancelRequested(worker: self.id, on: $0) }) {
                    cancelRunning(cancelled)
                }
            }
            if now - lastRescue >= rescueInterval {
                if case .success(let result) = session.run({ connection -> JobsTable.RescueResult in
                    try JobsTable.releaseStaleHolds(on: connection)
                    return try JobsTable.rescueExpired(on: connection)
                }) {
                    lastRescue = now
                    if result.requeued + result.deadLettered > 0 {
                        logger.warning("rescued jobs whose lease expired", [("requeued", result.requeued), ("dead_lettered", result.deadLettered)])
                        metrics.recordRescue(requeued: result.requeued, deadLettered: result.deadLettered)
                    }
                }
            }
            if now - lastPrune >= .seconds(60) {
                let retentionMs = Int64(configuration.retention.milliseconds)
                _ = session.run { connection in
                    _ = try JobsTable.pruneCompleted(olderThanMilliseconds: retentionMs, on: connection)
                    try WorkersTable.pruneDead(on: connection)
                    try AttemptStatsTable.prune(on: connection)
                    if let keep = self.configuration.deadLetterRetention {
                        _ = try DeadLettersTable.purge(olderThanMilliseconds: Int64(keep.milliseconds), on: connection)
                    }
                }
                lastPrune = now
            }
            if now - lastStatsFlush >= .seconds(5) {
                flushAttemptStats(session: session)
                lastStatsFlush = now
            }
            if now - lastSettingsRead >= .seconds(10) {
                if case .success(let rows) = session.run({ try QueueSettingsTable.all(on: $0) }) {
                    lock.withLock { queuePolicies.update(rows) }
                    lastSettingsRead = now
                }
            }
            reportEvidence(session: session)
            runDueProbes(session: session)
            maintenanceSignal.wait(timeout: .milliseconds(250))
        }
        reportEvidence(session: session)
        gracefulShutdown(session: session)
    }

    /// Adds this worker's attempt counts to the fleet-wide table.
    private func flushAttemptStats(session: DatabaseSession) {
        let counts = lock.withLock { () -> [AttemptStatsTable.Key: AttemptStatsTable.Counts] in
            defer { attemptCounts.removeAll(keepingCapacity: true) }
            return attemptCounts
        }
        guard !counts.isEmpty else { return }
        if case .failure = session.run({ try AttemptStatsTable.add(counts, on: $0) }) {
            // Keep them for the next try rather than lose them.
            lock.withLock {
                for (key, value) in counts {
                    var merged = attemptCounts[key] ?? .init()
                    merged.attempts += value.attempts
                    merged.retries += value.retries
                    merged.succeededAfterRetry += value.succeededAfterRetry
                    merged.delayMillisecondsSum += value.delayMillisecondsSum
                    for index in merged.delayBuckets.indices { merged.delayBuckets[index] += value.delayBuckets[index] }
                    attemptCounts[key] = merged
                }
            }
        }
    }

    /// Runs on the maintenance thread once stopping is set.
    private func gracefulShutdown(session: DatabaseSession) {
        _ = session.run { try WorkersTable.heartbeat(id: self.id, stopping: true, on: $0) }
        let deadline = ContinuousClock.now + configuration.shutdownGrace
        var lastRenewal = ContinuousClock.now
        // In-flight jobs finish within the grace; keep their leases alive meanwhile.
        while inFlightCount > 0 && ContinuousClock.now < deadline {
            if ContinuousClock.now - lastRenewal >= configuration.heartbeatInterval {
                let held = lock.withLock { Array(inFlight.keys) }
                _ = session.run { try JobsTable.extendLeases(ids: held, worker: self.id,
                                                              leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: $0) }
                lastRenewal = ContinuousClock.now
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let remaining = lock.withLock { () -> [Task<Void, Never>] in
            var tasks: [Task<Void, Never>] = []
            for (id, job) in inFlight {
                inFlight[id]?.abortedByShutdown = true
                if let task = job.task { tasks.append(task) }
            }
            return tasks
        }
        if !remaining.isEmpty {
            logger.warning("grace period over; aborting in-flight jobs", [("jobs", remaining.count)])
            remaining.forEach { $0.cancel() }
            let abortDeadline = ContinuousClock.now + .seconds(5)
            while inFlightCount > 0 && ContinuousClock.now < abortDeadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        flushAttemptStats(session: session)
        // Let the acknowledging thread write everything, then leave.
        lock.withLock { drained = true }
        ackSignal.signal()
        let flushDeadline = ContinuousClock.now + .seconds(10)
        while acknowledgements.count > 0 && ContinuousClock.now < flushDeadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        if acknowledgements.count > 0 {
            logger.error("could not write all results before exiting; their leases will expire and the jobs be rescued",
                         [("pending", acknowledgements.count)])
            lock.withLock { ackGiveUp = true }
        }
        ackSignal.signal()
        _ = session.run { try WorkersTable.deregister(id: self.id, on: $0) }
        claimSignal.signal()
    }

    /// Aborts running jobs an operator cancelled; each is recorded as `cancelled`.
    func cancelRunning(_ ids: [Int64]) {
        let tasks = lock.withLock { () -> [Task<Void, Never>] in
            ids.compactMap { id in
                guard inFlight[id] != nil, inFlight[id]?.cancelledByOperator == false else { return nil }
                inFlight[id]?.cancelledByOperator = true
                return inFlight[id]?.task
            }
        }
        for task in tasks { task.cancel() }
    }

    // MARK: - Listening

    private func listenLoop() {
        let session = makeSession(channels: ["courier_jobs", "courier_cancel"])
        defer { session.close() }
        var wasConnected = false
        while !isStopping {
            let result = session.run { connection in
                try connection.waitForNotifications(timeout: .milliseconds(500))
            }
            switch result {
            case .success(let notifications):
                if !wasConnected {
                    // Notifications sent while we were away are lost: look once.
                    wasConnected = true
                    claimSignal.signal()
                }
                for note in notifications {
                    if note.channel == "courier_jobs" {
                        claimSignal.signal()
                    } else if note.channel == "courier_cancel" {
                        cancelRunning(note.payload.split(separator: ",").compactMap { Int64($0) })
                    }
                }
            case .failure:
                wasConnected = false
            }
        }
    }
}

/// The version string workers register with.
public enum CourierVersion {
    public static let current = "0.1.0"
}
