import CourierCore
import CourierStore
import Foundation

/// Where claimed jobs go, and how much room there is for them.
protocol JobIntake: AnyObject, Sendable {
    /// Slots free for new jobs (0 once shutdown began).
    var freeSlots: Int { get }
    /// Jobs held right now.
    var heldCount: Int { get }
    /// Free slots and held jobs, read together.
    var slots: (free: Int, held: Int) { get }
    /// The destination holding the most slots, and how many; nil when none is held.
    var busiestDestination: (destination: String, count: Int)? { get }
    /// Every lease this worker knows of: its jobs', and those of results not yet written.
    var heldLeases: [WorkerStateMachine.Lease] { get }
    /// Gives back, unattempted, leases the database says this worker holds that it does not
    /// know (a claim whose reply was lost).
    func handBackUnknown(_ leases: [WorkerStateMachine.Lease])
    /// Takes over jobs a claim or a won probe returned; `provenAt` is when the claim was
    /// sent (their leases are trusted from then, see ``LeaseFence``).
    func accept(_ jobs: [ClaimedJob], probeGeneration: Int64?, provenAt: ContinuousClock.Instant)
}

/// Leases batches of jobs sized to the free slots, round-robin over the queues, and
/// hands them to the worker. When to claim is `ClaimTrigger`'s decision. Waits for
/// NOTIFY (via `wake`), enough free slots (the jobs' side wakes it at the trigger's
/// threshold, not per job), a retry falling due, or the poll interval. Claims nothing
/// until the database has every migration.
final class Claimer: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        var worker: UUID
        var queues: [String]
        /// Most jobs in one claim statement. Default 100.
        var claimBatch: Int
        var concurrency: Int
        var leaseMilliseconds: Int
        /// The fallback wait when no NOTIFY arrives. Default 1 s.
        var pollInterval: Duration
        /// How often a worker still missing migrations looks again. Default 2 s.
        var schemaRecheck: Duration = .seconds(2)
        /// When to claim (threshold and linger).
        var trigger: ClaimTrigger
        /// After a NOTIFY wake, one more claim this much later: it picks up the jobs of
        /// transactions that committed just after the one that notified, which skip the
        /// NOTIFY while another holds it (`courier.enqueue`, sql/schema/jobs.sql). Default 25 ms.
        var wakeFollowUp: Duration = .milliseconds(25)

        init(_ c: WorkerConfiguration, leases: LeaseSettings, worker: UUID) {
            self.worker = worker
            queues = c.queues
            claimBatch = c.claimBatch
            concurrency = c.concurrency
            leaseMilliseconds = leases.leaseMilliseconds
            pollInterval = c.pollInterval
            trigger = ClaimTrigger(claimBatch: c.claimBatch, concurrency: c.concurrency)
        }
    }

    let name = "courier-claim"
    let configuration: Configuration
    let session: StoreSession
    unowned let intake: any JobIntake
    private let completer: Completer
    private let settings: SettingsRefresher
    private let logger: Logger
    let metrics: WorkerMetrics
    /// The fleet's traffic policies: whether to run the gated claim, and how soon to look again.
    private let traffic: TrafficState
    private var nextQueue = 0
    /// How each round's slots are shared between the gated and the plain claim.
    private var share = ClaimShare()
    /// Where each queue's next plain claim starts (see ``ClaimBounds``).
    private var bounds = ClaimBounds()
    private var schemaReady = false
    private var reportedMissing = false
    private let lock = NSLock()
    private var missing: [String] = []
    /// Jobs this worker knows fall due (its own retries, a NOTIFY's follow-up claim).
    private var knownDue = ClaimRecheck()
    /// The last claim came back full: more jobs are probably runnable.
    private var moreWaiting = false
    /// When this thread first saw a free slot since its last claim.
    private var freeSince: ContinuousClock.Instant?
    /// Per queue: how each round's slots are claimed fairly across destinations (see ``ClaimPlanner``).
    private var planners: [String: ClaimPlanner] = [:]
    /// Which queues have keyed jobs and are claimed by fairness key (see ``FairnessMode``).
    /// Behind `lock`: the listener's thread notes announcements.
    private var fairness = FairnessMode()
    /// A claim failed with the connection: it may have committed, and its jobs be leased to
    /// this worker without the worker knowing. Looked into before the next claim.
    private var claimReplyLost = false
    /// How soon a claimer whose claim lost its connection tries again (and so looks for the
    /// leases that claim may have taken).
    static let lostReplyRecheck: Duration = .milliseconds(100)
    /// Called once the schema is found complete (wakes the services that waited for it).
    var onSchemaReady: (@Sendable () -> Void)?

    init(configuration: Configuration, session: StoreSession, intake: any JobIntake, completer: Completer,
         settings: SettingsRefresher, logger: Logger, metrics: WorkerMetrics, traffic: TrafficState = TrafficState()) {
        self.traffic = traffic
        self.configuration = configuration
        self.session = session
        self.intake = intake
        self.completer = completer
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
    }

    /// Migrations this worker needs that the database lacks, as last checked.
    var missingMigrations: [String] { lock.withLock { missing } }

    /// True once the schema was found complete. The other database services wait for it,
    /// so a worker started before `jobctl migrate` logs what is missing once and nothing else.
    var isSchemaReady: Bool { lock.withLock { schemaComplete } }
    private var schemaComplete = false

    /// A job this worker retried falls due at `due`: look then rather than at the next poll.
    func noteRetry(due: ContinuousClock.Instant) {
        lock.withLock { knownDue.note(due: due) }
    }

    /// A NOTIFY arrived (the caller wakes the thread): claim now, and once more a little later.
    func noteNotification(now: ContinuousClock.Instant = .now) {
        noteRetry(due: now + configuration.wakeFollowUp)
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        if !schemaReady {
            guard checkSchema() else { return configuration.schemaRecheck }
            // Per-queue retry settings before the first claim; the refresher keeps them fresh.
            settings.refresh(using: session)
        }
        let (free, held) = intake.slots
        if free > 0 && freeSince == nil { freeSince = now }
        switch configuration.trigger.decide(free: free, held: held, backlogged: completer.isBacklogged,
                                            moreWaiting: moreWaiting, freeSince: freeSince, now: now) {
        case .sleep where !reserveClaimDue(free: free, now: now): return nextWait(now: now)
        case .wait(let linger) where !reserveClaimDue(free: free, now: now): return min(linger, nextWait(now: now))
        default: break
        }
        freeSince = nil
        moreWaiting = false
        if claimReplyLost { reconcileLeases() }
        let queues = configuration.queues
        if lock.withLock({ fairness.probeDue(now: now) }) { probeFairnessKeys(now: now) }
        for _ in 0..<queues.count {
            let queue = queues[nextQueue % queues.count]
            nextQueue += 1
            let want = min(intake.freeSlots, configuration.claimBatch)
            guard want > 0 else { break }
            // Destinations with a traffic policy, within their limits, and the plain claim share
            // the round (ClaimShare): neither can fill it while the other has work.
            var gatedShare = 0, gated = 0
            if traffic.isActive {
                gatedShare = share.gatedShare(of: want)
                if gatedShare > 0 {
                    guard let taken = claimGated(queue: queue, limit: gatedShare, now: now) else { break }
                    gated = taken
                }
            }
            // The plain claim, and spread claims where one destination would hold the rest back
            // (Claimer+Fair); in a queue with keyed jobs, the fair claim over its keys instead.
            let plainWant = want - gated
            var plainClaimed = 0, plainFull = false
            if plainWant > 0 && !lock.withLock({ fairness.isKeyed(queue) }) {
                guard let round = claimPlanned(queue: queue, want: plainWant, now: now) else { break }
                (plainClaimed, plainFull) = (round.claimed, round.plainFull)
                // Announced jobs the plain claim did not find may be keyed: look now, not at the next probe.
                if plainClaimed < plainWant, lock.withLock({ fairness.probeDue(now: now, plainCameBackShort: true) }) {
                    probeFairnessKeys(now: now)
                }
            }
            if plainWant - plainClaimed > 0 && lock.withLock({ fairness.isKeyed(queue) }) {
                let limit = lock.withLock { fairness.fairClaimLimit(queue, free: plainWant - plainClaimed, now: now) }
                guard let taken = claimFair(queue: queue, limit: limit, now: now) else { break }
                plainClaimed += taken
                plainFull = plainClaimed == plainWant
            }
            let topUp = traffic.isActive
                ? ClaimShare.gatedTopUp(free: want, gatedShare: gatedShare, gatedTaken: gated, plainTaken: plainClaimed) : 0
            if topUp > 0 {
                guard let taken = claimGated(queue: queue, limit: topUp, now: now) else { break }
                gated += taken
            }
            // A full batch: more may be waiting, claim again at once.
            if plainFull || gated + plainClaimed == want {
                moreWaiting = true
                return .zero
            }
        }
        // A claim that lost its connection may have committed: look into it as soon as the
        // session is back, not at the next poll.
        return claimReplyLost ? min(Self.lostReplyRecheck, nextWait(now: now)) : nextWait(now: now)
    }

    func finish() { session.close() }

    /// Runs a claim statement. A failure that lost the connection may have lost a committed
    /// claim's reply: remember to look for leases this worker holds without knowing.
    func runClaim<T>(_ body: @escaping (any WorkerStore) throws -> T) -> T? {
        switch session.run(body) {
        case .success(let value): return value
        case .failure(let error):
            if error.isConnectionLoss { claimReplyLost = true }
            return nil
        }
    }

    /// After a lost claim reply: the leases the database gives this worker that it does not
    /// know go back unattempted (through the Completer, so they stay renewed until the
    /// hand-back is written), instead of waiting out the lease to be rescued as an attempt,
    /// or dead-lettered as `ambiguous` though never sent. Run on the claimer's thread, so no
    /// claim of its own is in flight; the prober's jobs are left out by the query, and the
    /// hand-back is fenced by lease token, so a job whose result was written meanwhile is
    /// untouched.
    private func reconcileLeases() {
        guard case .success(let inDatabase) = session.run({ try $0.jobsLeasesHeld(worker: self.configuration.worker) }) else { return }
        claimReplyLost = false
        let known = Set(intake.heldLeases)
        let unknown = inDatabase.map { WorkerStateMachine.Lease(id: $0.id, token: $0.lease) }.filter { !known.contains($0) }
        guard !unknown.isEmpty else { return }
        logger.info("handing back jobs leased by a claim whose reply was lost", [("jobs", unknown.count)])
        intake.handBackUnknown(unknown)
    }

    /// The plain claim of `queue`, from the bound ``ClaimBounds`` keeps (or from the start);
    /// hands the jobs over. `restart`: it came back short from a bound, so a claim from the
    /// start should follow before idling. Nil when the claim failed.
    func claimPlain(queue: String, limit: Int, now: ContinuousClock.Instant) -> (jobs: [ClaimedJob], restart: Bool)? {
        let from = bounds.start(queue: queue, now: now)
        let startedAt = ContinuousClock.now
        guard let batch = runClaim({ store in
            try store.jobsClaim(queue: queue, limit: limit, worker: self.configuration.worker,
                                leaseMilliseconds: self.configuration.leaseMilliseconds, after: from)
        }) else { return nil }
        let endedAt = ContinuousClock.now
        // The jobs first: the bookkeeping below is not on their way to running.
        intake.accept(batch.jobs, probeGeneration: nil, provenAt: now)
        let next = bounds.record(queue: queue, from: from, asked: limit, taken: batch.jobs.count, last: batch.last,
                                 startedAt: startedAt, endedAt: endedAt)
        metrics.recordClaim(batch: batch.jobs.count)
        return (batch.jobs, next == .claimFromStart)
    }

    /// Claims gated jobs of `queue` and hands them over; returns how many, nil when the claim failed.
    /// `now` is taken before the claim is sent: the leases are trusted from then (see ``LeaseFence``).
    private func claimGated(queue: String, limit: Int, now: ContinuousClock.Instant) -> Int? {
        guard let jobs = runClaim({ store in
            try store.jobsClaimGated(queue: queue, limit: limit, worker: self.configuration.worker,
                                     leaseMilliseconds: self.configuration.leaseMilliseconds)
        }) else { return nil }
        if !jobs.isEmpty {
            metrics.recordClaim(batch: jobs.count)
            intake.accept(jobs, probeGeneration: nil, provenAt: now)
        }
        return jobs.count
    }

    /// A worker rolled out before `jobctl migrate` ran would fail on every statement
    /// that needs the new schema; instead it claims nothing, says once what is
    /// missing, reports not ready, and starts by itself when the migrations land.
    private func checkSchema() -> Bool {
        guard case .success(let applied) = session.run({ try $0.migrationsApplied() }) else { return false }
        let lacking = Migration.all.filter { !applied.contains($0.version) }.map(\.name)
        lock.withLock { missing = lacking }
        if lacking.isEmpty {
            if reportedMissing { logger.info("the schema is up to date: claiming jobs") }
            schemaReady = true
            lock.withLock { schemaComplete = true }
            onSchemaReady?()
            return true
        }
        if !reportedMissing {
            logger.error("the database lacks migrations this worker needs; run 'jobctl migrate'. Claiming nothing until then",
                         [("missing", lacking.joined(separator: ","))])
            reportedMissing = true
        }
        return false
    }

    /// New jobs were announced: a spread claim that found nothing may look again, and a
    /// keyed job may have arrived in a queue claimed plainly.
    func noteJobsArrived() {
        // In place, stepping a bare index: `planners.keys` and `planners.indices` each hold a
        // reference to the dictionary's storage, so a write through `values` while iterating
        // either one copied the whole dictionary (every planner with it) on every notification,
        // on the way to waking this thread (seen in a `perf record` of the listener).
        lock.withLock {
            fairness.noteJobsArrived()
            var index = planners.startIndex
            while index != planners.endIndex {
                planners.values[index].noteJobsArrived()
                planners.formIndex(after: &index)
            }
        }
    }

    /// Asks which queues have keyed jobs waiting (one index probe per queue). A failed probe
    /// changes nothing: the next one is due at once.
    private func probeFairnessKeys(now: ContinuousClock.Instant) {
        let queues = configuration.queues
        guard let keyed = runClaim({ try $0.queuesWithFairnessKeys(queues) }) else { return }
        lock.withLock { fairness.probed(queues: queues, keyed: keyed, now: now) }
    }

    /// The fair claim of `queue` for up to `limit` jobs, from this worker's cursor; hands the
    /// jobs over and returns how many, nil when the claim failed.
    private func claimFair(queue: String, limit: Int, now: ContinuousClock.Instant) -> Int? {
        let (cursor, bounds) = lock.withLock { (fairness.cursor(queue), fairness.bounds(queue, now: now)) }
        guard let round = runClaim({ store in
            try store.jobsClaimFair(queue: queue, limit: limit, cursor: cursor, quantum: Self.fairQuantum,
                                    visit: max(Self.fairMinimumVisits, 2 * limit), bounds: bounds,
                                    worker: self.configuration.worker, leaseMilliseconds: self.configuration.leaseMilliseconds)
        }) else { return nil }
        lock.withLock {
            fairness.fairClaimed(queue, cursor: round.cursor, last: round.last, claimed: round.claimedPerKey, quantum: Self.fairQuantum, now: now)
        }
        if !round.jobs.isEmpty {
            intake.accept(round.jobs, probeGeneration: nil, provenAt: now)
            metrics.recordClaim(batch: round.jobs.count)
            metrics.recordFairClaim(round.claimedPerKey)
        }
        return round.jobs.count
    }

    /// Jobs a key of weight 1 gets per visit of the fair claim's round (a key of weight W gets
    /// W times as many). Small enough that a round over a few keys is short, large enough
    /// that a busy key is not visited once per job.
    static let fairQuantum = 16
    /// The fair claim looks at no fewer keys per call than this (and at most 2 per job it may take).
    static let fairMinimumVisits = 64

    /// Runs `body` on `queue`'s planner.
    func withPlanner<T>(_ queue: String, _ body: (inout ClaimPlanner) -> T) -> T {
        lock.withLock {
            var planner = planners[queue] ?? ClaimPlanner(concurrency: configuration.concurrency, quietRecheck: configuration.pollInterval)
            defer { planners[queue] = planner }
            return body(&planner)
        }
    }

    /// The poll interval, or less when a retry this worker scheduled falls due sooner.
    private func nextWait(now: ContinuousClock.Instant) -> Duration {
        if let recheck = spreadRecheck(now: now) { return min(recheck + .milliseconds(1), nextWaitBeforeSpread(now: now)) }
        return nextWaitBeforeSpread(now: now)
    }

    private func nextWaitBeforeSpread(now: ContinuousClock.Instant) -> Duration {
        // Gated jobs may be waiting for a slot or a token: look again soon.
        if let recheck = traffic.claimRecheck { return min(recheck, retryWait(now: now)) }
        return retryWait(now: now)
    }

    private func retryWait(now: ContinuousClock.Instant) -> Duration {
        lock.withLock { knownDue.wait(afterRoundAt: now, pollInterval: configuration.pollInterval) }
    }
}
