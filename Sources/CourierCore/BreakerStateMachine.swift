import Foundation

/// One destination's circuit breaker as a value: feed it one event at a time,
/// it answers with the action to take. It never reads a clock.
///
/// This is the per-process breaker and the reference model for the SQL one.
///
/// - **closed**: traffic flows. Outcomes are counted: consecutive failures and
///   a fixed window of `policy.window` (it restarts when an outcome arrives
///   after it ended). A trip opens the breaker for the base `policy.cooldown`. ``BreakerPolicy/tripReason(consecutiveFailures:successes:failures:)``
///   decides when it opens.
/// - **open(until:cooldown:)**: no traffic. After `until`, exactly one caller of
///   ``tryAcquireProbe(now:)`` gets a probe and the state becomes half-open.
///   A forced open (operator) has `until == .distantFuture` and never probes.
/// - **halfOpen(probeUntil:generation:)**: one probe runs. Its result is applied
///   only if its generation is still current: success closes, failure reopens
///   with the cooldown doubled (up to `cooldownMax`). If the probe does not
///   report by `probeUntil`, the next caller gets a new probe with a new
///   generation, and the old one's late result is ignored.
///
/// Ordinary outcomes that arrive while open or half-open (requests that
/// started before the trip) are ignored.
public struct BreakerStateMachine: Sendable, Equatable {
    /// The breaker's state.
    public enum State: Sendable, Equatable {
        case closed
        case open(until: Date, cooldown: Duration)
        case halfOpen(probeUntil: Date, generation: Int64)

        /// The stored name of this state.
        public var name: BreakerStateName {
            switch self {
            case .closed: .closed
            case .open: .open
            case .halfOpen: .halfOpen
            }
        }
    }

    /// The thresholds and timings.
    public var policy: BreakerPolicy
    /// The current state.
    public private(set) var state: State
    /// When the current state began.
    public private(set) var since: Date
    /// The cooldown the next failed probe doubles (the base after closing by a probe or a reset).
    public private(set) var cooldown: Duration
    /// The last probe generation handed out (monotonic, never reset).
    public private(set) var generation: Int64
    /// Whether an operator forced the breaker open.
    public private(set) var forcedOpen: Bool
    /// Failures since the last success while closed.
    public private(set) var consecutiveFailures: Int
    /// Start of the current rate window.
    public private(set) var windowStart: Date
    /// Successes in the current window.
    public private(set) var windowSuccesses: Int
    /// Failures in the current window.
    public private(set) var windowFailures: Int

    /// A closed breaker at `now`.
    public init(policy: BreakerPolicy = BreakerPolicy(), now: Date) {
        self.policy = policy
        self.state = .closed
        self.since = now
        self.cooldown = policy.cooldown
        self.generation = 0
        self.forcedOpen = false
        self.consecutiveFailures = 0
        self.windowStart = now
        self.windowSuccesses = 0
        self.windowFailures = 0
    }

    /// Whether ordinary requests may go to the destination (only when closed).
    public var admitsTraffic: Bool { state == .closed }

    /// When a probe may next be granted, if the breaker is not closed.
    public var nextProbeAt: Date? {
        switch state {
        case .closed: nil
        case .open(let until, _): until
        case .halfOpen(let probeUntil, _): probeUntil
        }
    }

    // MARK: Outcomes while closed

    /// Records a success. (It can still open the breaker: reaching the
    /// minimum volume may bring a high failure rate into effect.)
    public mutating func recordSuccess(now: Date, using rng: inout some RandomNumberGenerator) -> BreakerAction {
        apply(BreakerEvidence(successes: 1), now: now, using: &rng)
    }

    /// Records a failure that counts against the destination.
    public mutating func recordFailure(now: Date, using rng: inout some RandomNumberGenerator) -> BreakerAction {
        apply(BreakerEvidence(failures: 1, consecutiveFailures: 1), now: now, using: &rng)
    }

    /// Records one outcome: `failure` true for a failure, false for a success.
    public mutating func record(failure: Bool, now: Date, using rng: inout some RandomNumberGenerator) -> BreakerAction {
        failure ? recordFailure(now: now, using: &rng) : recordSuccess(now: now, using: &rng)
    }

    /// Adds a batch of evidence (one worker's flush). Ignored unless closed.
    public mutating func apply(_ evidence: BreakerEvidence, now: Date, using rng: inout some RandomNumberGenerator) -> BreakerAction {
        guard state == .closed, !evidence.isEmpty else { return .none }
        // As courier.breaker_report: the window restarts only once it has fully passed.
        if now > windowStart.adding(policy.window) {
            windowStart = now
            windowSuccesses = 0
            windowFailures = 0
        }
        windowSuccesses += evidence.successes
        windowFailures += evidence.failures
        consecutiveFailures = evidence.successes > 0
            ? evidence.consecutiveFailures
            : consecutiveFailures + evidence.failures
        guard let reason = policy.tripReason(
            consecutiveFailures: consecutiveFailures, successes: windowSuccesses, failures: windowFailures)
        else { return .none }
        // As courier.breaker_report: a trip from closed opens for the base cooldown
        // (only failed probes escalate it).
        cooldown = policy.cooldown
        return open(reason: reason, cooldown: cooldown, now: now, using: &rng)
    }

    // MARK: Probing

    /// Grants the single half-open probe if one is due: the cooldown has
    /// elapsed, or the current probe's lease has expired. Nil otherwise.
    public mutating func tryAcquireProbe(now: Date) -> BreakerProbe? {
        let reason: BreakerTransition.Reason
        switch state {
        case .closed:
            return nil
        case .open(let until, _):
            guard !forcedOpen, now >= until else { return nil }
            reason = .cooldownElapsed
        case .halfOpen(let probeUntil, _):
            // As courier.breaker_try_probe: the lease must have passed, not just be reached.
            guard now > probeUntil else { return nil }
            reason = .probeLeaseExpired
        }
        let transition = BreakerTransition(from: state.name, to: .halfOpen, reason: reason, at: now)
        generation += 1
        let expiresAt = now.adding(policy.probeLease)
        state = .halfOpen(probeUntil: expiresAt, generation: generation)
        since = now
        return BreakerProbe(generation: generation, expiresAt: expiresAt, transition: transition)
    }

    /// Applies a probe's result if `generation` is still the current probe's.
    public mutating func recordProbe(
        generation probeGeneration: Int64,
        succeeded: Bool,
        now: Date,
        using rng: inout some RandomNumberGenerator
    ) -> BreakerAction {
        guard case .halfOpen(_, let current) = state, current == probeGeneration else {
            return .staleProbeIgnored
        }
        if succeeded {
            cooldown = policy.cooldown
            return close(reason: .probeSucceeded, now: now)
        }
        cooldown = policy.nextCooldown(after: cooldown)
        return open(reason: .probeFailed, cooldown: cooldown, now: now, using: &rng)
    }

    // MARK: Operator

    /// Forces the breaker open until ``forceClose(now:)`` or ``reset(now:)``.
    public mutating func forceOpen(now: Date) -> BreakerAction {
        let from = state.name
        forcedOpen = true
        state = .open(until: .distantFuture, cooldown: cooldown)
        since = now
        return .transitioned(BreakerTransition(from: from, to: .open, reason: .operatorOpen, at: now))
    }

    /// Closes the breaker and clears its counts. (The next trip opens for the base
    /// cooldown, as the fleet's SQL breaker does.)
    public mutating func forceClose(now: Date) -> BreakerAction {
        close(reason: .operatorClose, now: now)
    }

    /// Returns the breaker to its initial state (closed, counts cleared, base
    /// cooldown). The probe generation stays monotonic so old probes stay fenced.
    public mutating func reset(now: Date) -> BreakerAction {
        cooldown = policy.cooldown
        return close(reason: .operatorReset, now: now)
    }

    // MARK: Helpers

    private mutating func open(
        reason: BreakerTransition.Reason,
        cooldown openFor: Duration,
        now: Date,
        using rng: inout some RandomNumberGenerator
    ) -> BreakerAction {
        let from = state.name
        let until = now.adding(policy.jitteredCooldown(openFor, using: &rng))
        state = .open(until: until, cooldown: openFor)
        since = now
        clearCounts(now: now)
        return .transitioned(BreakerTransition(from: from, to: .open, reason: reason, at: now))
    }

    private mutating func close(reason: BreakerTransition.Reason, now: Date) -> BreakerAction {
        let from = state.name
        state = .closed
        forcedOpen = false
        since = now
        clearCounts(now: now)
        return .transitioned(BreakerTransition(from: from, to: .closed, reason: reason, at: now))
    }

    private mutating func clearCounts(now: Date) {
        consecutiveFailures = 0
        windowStart = now
        windowSuccesses = 0
        windowFailures = 0
    }
}
