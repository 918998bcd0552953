import CourierStore

/// Where the claimer's next plain claim of each queue starts: after the last job it took
/// (a moving lower bound), or from the start of the queue (a full claim).
///
/// Why: while a long transaction elsewhere holds the xmin horizon still, the index entries
/// of every job claimed since cannot be removed, and a claim from the start walks them all
/// (and a heap fetch each) before it reaches a job it can take. A claim started after the
/// last position it took walks none of them.
///
/// What the bound misses, jobs that land behind it (a released hold, a hand-back, a rescue,
/// a job enqueued with a lower priority number or by a transaction that began earlier), a
/// full claim finds. There is one:
///   - at once, whenever a claim from a bound took fewer jobs than asked (before the claimer
///     goes idle, it has always looked at the whole queue), and next whenever the last full
///     claim came back short (the bound only matters while claims come back full);
///   - at least every `fullClaimInterval` while claims from the bound keep coming back full,
///     and never more often than `costFactor` times the last full claim's own duration, so
///     full claims take at most about 1/costFactor of the claimer's time while they are
///     cheap; but never less often than every `maxSpacing` (default 5 s), however slow the
///     last full claim was.
///
/// So a job behind the bound waits at most `maxSpacing` plus one full claim's duration
/// (about 1 s while full claims take under 50 ms; at most about 5 s plus one full claim
/// when they are slow). The cap matters exactly when full claims are slow: a long
/// transaction holding vacuum back makes them walk dead entries, and without the cap the
/// wait would grow to `costFactor` times that walk (20 s behind a 1 s claim). The price is
/// that a full claim slower than `maxSpacing / costFactor` (250 ms) takes more than
/// 1/costFactor of the claimer's time: a claim of d seconds at most d / (d + 5 s) of it.
/// A value type with the clock passed in, tested one event at a time.
struct ClaimBounds: Sendable {
    /// The longest a job behind the bound waits while claims keep coming back full. Default 1 s.
    var fullClaimInterval: Duration = .seconds(1)
    /// Full claims are spaced at least this many times their own duration. Default 20.
    var costFactor: Int = 20
    /// Full claims are never spaced further apart than this (nor than `fullClaimInterval`
    /// when that is longer): the cap on the wait of a job behind the bound. Default 5 s.
    var maxSpacing: Duration = .seconds(5)

    private var bounds: [String: ClaimPosition] = [:]
    private var fullDue: [String: ContinuousClock.Instant] = [:]

    init(fullClaimInterval: Duration = .seconds(1), costFactor: Int = 20, maxSpacing: Duration = .seconds(5)) {
        self.fullClaimInterval = fullClaimInterval
        self.costFactor = costFactor
        self.maxSpacing = maxSpacing
    }

    /// Pure: how long after a full claim of `duration` ended the next one is due. At least
    /// `fullClaimInterval`, `costFactor` times `duration` when that is longer, and at most
    /// `maxSpacing` (or `fullClaimInterval`, whichever is longer).
    func spacing(afterFullClaimOf duration: Duration) -> Duration {
        max(fullClaimInterval, min(maxSpacing, duration * costFactor))
    }

    /// Where the next claim of `queue` starts: nil is a full claim.
    func start(queue: String, now: ContinuousClock.Instant) -> ClaimPosition? {
        guard let bound = bounds[queue], let due = fullDue[queue], now < due else { return nil }
        return bound
    }

    /// What to do after a claim.
    enum Next: Equatable {
        /// The claim was full (or full claims found nothing): carry on as usual.
        case carryOn
        /// A claim from a bound came back short: claim again, from the start, at once.
        case claimFromStart
    }

    /// Records a claim of `queue` that started at `from` (nil: a full claim), asked for
    /// `asked` jobs and took `taken`, ending at `last`; `startedAt`/`endedAt` time it.
    mutating func record(queue: String, from: ClaimPosition?, asked: Int, taken: Int, last: ClaimPosition?,
                         startedAt: ContinuousClock.Instant, endedAt: ContinuousClock.Instant) -> Next {
        if from == nil {
            // A full claim: the bound restarts from what it took. One that came back short
            // has seen the whole queue: the next claim starts from the start again.
            bounds[queue] = taken < asked ? nil : last
            fullDue[queue] = endedAt + spacing(afterFullClaimOf: endedAt - startedAt)
            return .carryOn
        }
        if taken < asked {
            // The rest after the bound is exhausted: look at the whole queue before idling.
            bounds[queue] = nil
            return .claimFromStart
        }
        if let last { bounds[queue] = last }
        return .carryOn
    }
}
