import Foundation

/// A breaker state's name as stored in `courier.breakers.state`.
public enum BreakerStateName: String, Sendable, CaseIterable, Codable {
    case closed
    case open
    case halfOpen = "half_open"
}

/// One change of a breaker's state, as recorded in the events table and logs.
public struct BreakerTransition: Sendable, Equatable {
    /// Why the state changed. Raw values are stored in the events table.
    public enum Reason: String, Sendable, CaseIterable, Codable {
        /// Closed → open: too many failures in a row.
        case consecutiveFailures = "consecutive_failures"
        /// Closed → open: the failure rate over the window reached the threshold.
        case failureRate = "failure_rate"
        /// Open → half-open: the cooldown elapsed and a probe was granted.
        case cooldownElapsed = "cooldown_elapsed"
        /// Half-open → half-open: the probe's lease expired and a new probe was granted.
        case probeLeaseExpired = "probe_lease_expired"
        /// Half-open → closed.
        case probeSucceeded = "probe_succeeded"
        /// Half-open → open, with a longer cooldown.
        case probeFailed = "probe_failed"
        /// An operator forced the breaker open (`jobctl breaker open`).
        case operatorOpen = "operator_open"
        /// An operator closed it (`jobctl breaker close`).
        case operatorClose = "operator_close"
        /// An operator reset it (`jobctl breaker reset`).
        case operatorReset = "operator_reset"
    }

    /// The state before.
    public var from: BreakerStateName
    /// The state after.
    public var to: BreakerStateName
    /// Why.
    public var reason: Reason
    /// When.
    public var at: Date

    /// Creates a transition record.
    public init(from: BreakerStateName, to: BreakerStateName, reason: Reason, at: Date) {
        self.from = from
        self.to = to
        self.reason = reason
        self.at = at
    }
}

/// What a breaker event caused.
public enum BreakerAction: Sendable, Equatable {
    /// Nothing changed state.
    case none
    /// The state changed; record and announce it.
    case transitioned(BreakerTransition)
    /// A probe result carried a generation that is no longer current; it was ignored.
    case staleProbeIgnored
}

/// A granted half-open probe: run one request and report its result with
/// this generation before `expiresAt`.
public struct BreakerProbe: Sendable, Equatable {
    /// The fencing token; results with an older generation are ignored.
    public var generation: Int64
    /// When another worker may take over the probe.
    public var expiresAt: Date
    /// The transition that granting the probe caused.
    public var transition: BreakerTransition

    /// Creates a probe grant.
    public init(generation: Int64, expiresAt: Date, transition: BreakerTransition) {
        self.generation = generation
        self.expiresAt = expiresAt
        self.transition = transition
    }
}
