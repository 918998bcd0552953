/// When the claimer claims, as pure decisions over slot counts and time.
///
/// A claim statement costs about as much for one job as for a hundred, so a busy
/// worker waits until enough slots are free for a worthwhile batch; an idle worker
/// claims at once, so pickup stays fast. The jobs' side asks `wakeAfterFinish` when a
/// job ends, and wakes the claimer's thread only when that crossing happened (about
/// once per threshold's worth of jobs), not once per job: on a small machine a thread wake-up per
/// job costs more than the job.
struct ClaimTrigger: Sendable, Equatable {
    /// The most jobs one claim takes: the claim batch, at most the concurrency.
    var fullBatch: Int
    /// How long free slots below the threshold may wait while jobs are known to be
    /// waiting (the last claim came back full) before a smaller claim fills them.
    /// Default 50 ms.
    var linger: Duration

    init(claimBatch: Int, concurrency: Int, linger: Duration = .milliseconds(50)) {
        fullBatch = max(1, min(claimBatch, concurrency))
        self.linger = linger
    }

    /// While busy, a claim waits for this many free slots: half a full batch, at most
    /// ``busyThresholdLimit``, at least 1. A large batch pays off when many slots are free at
    /// once; a busy worker that waited for half of it would leave that many slots empty
    /// between claims, which slow jobs (the usual webhook) would pay for in throughput.
    var threshold: Int { max(1, min(fullBatch / 2, Self.busyThresholdLimit)) }

    /// The most free slots a busy worker waits for before it claims. 50 amortizes a claim
    /// statement's fixed cost well (it costs about as much for one job as for fifty).
    static let busyThresholdLimit = 50

    /// What the claimer should do now.
    enum Decision: Sendable, Equatable {
        /// Claim up to the free slots.
        case claim
        /// Wait at most this long (a wake-up cuts it short), then ask again.
        case wait(Duration)
        /// Nothing to do until woken (or the poll interval passes).
        case sleep
    }

    /// - Parameters:
    ///   - free: slots free for new jobs (0 once shutdown began).
    ///   - held: jobs the worker holds.
    ///   - backlogged: so many results wait to be written that claiming more would only grow the pile.
    ///   - moreWaiting: the last claim came back full, so more jobs are probably runnable.
    ///   - freeSince: when the claimer first saw a free slot since its last claim (nil if it has not).
    func decide(free: Int, held: Int, backlogged: Bool, moreWaiting: Bool,
                freeSince: ContinuousClock.Instant?, now: ContinuousClock.Instant) -> Decision {
        guard !backlogged else { return .sleep }
        // Idle: claim at once, so a single enqueued job is picked up without delay.
        if free > 0 && (held == 0 || free >= threshold) { return .claim }
        // Below the threshold, with nothing known to be waiting: the threshold's wake-up will come.
        guard moreWaiting else { return .sleep }
        // Jobs wait and a few slots are free: fill them once they have lingered.
        guard free > 0, let freeSince else { return .wait(linger) }
        let waited = now - freeSince
        return waited >= linger ? .claim : .wait(linger - waited)
    }

    /// Whether a job that just ended (leaving `free` slots free and `held` jobs held)
    /// should wake the claimer: only when the free slots reach the threshold, or the
    /// worker became idle. Between those moments the claimer would find nothing to do.
    func wakeAfterFinish(free: Int, held: Int) -> Bool {
        free > 0 && (held == 0 || free == threshold)
    }
}
