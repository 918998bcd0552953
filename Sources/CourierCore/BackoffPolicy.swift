import Foundation

/// How long to wait before the next attempt: a strategy, capped, with jitter.
///
/// The nominal delay after attempt *n* (1-based) is
/// - constant: `base`
/// - linear: `base × n`
/// - exponential (default): `base × multiplier^(n-1)`
///
/// capped at `cap`. Jitter then spreads it (with `d` the capped nominal delay):
/// - full (default): uniform in `0...d`
/// - equal: `d/2` plus uniform in `0...d/2`
/// - decorrelated: `min(cap, uniform in base...max(base, previous × 3))`,
///   where `previous` is the delay used last time (`base` on the first retry);
///   the strategy is not used
/// - none: `d`
///
/// The result is never negative and never exceeds `cap`.
public struct BackoffPolicy: Sendable, Equatable {
    /// How the nominal delay grows with the attempt number.
    /// The declaration order is the order help and errors list the values in.
    public enum Strategy: String, Sendable, CaseIterable, Codable {
        case exponential, linear, constant

        /// Parses a flag value, naming `field` on error.
        public static func parse(_ text: String, field: String = "--backoff") throws(ValidationError) -> Strategy {
            guard let value = Strategy(rawValue: text.asciiLowercased) else {
                throw ValidationError(field: field, message: "unknown backoff \(Quoting.quote(text)); expected one of \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
    }

    /// How randomness spreads the delay.
    /// The declaration order is the order help and errors list the values in.
    public enum Jitter: String, Sendable, CaseIterable, Codable {
        case full, equal, decorrelated, none

        /// Parses a flag value, naming `field` on error.
        public static func parse(_ text: String, field: String = "--jitter") throws(ValidationError) -> Jitter {
            guard let value = Jitter(rawValue: text.asciiLowercased) else {
                throw ValidationError(field: field, message: "unknown jitter \(Quoting.quote(text)); expected one of \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
    }

    /// The growth strategy (default exponential).
    public var strategy: Strategy
    /// The first delay (default 1s).
    public var base: Duration
    /// The growth factor of the exponential strategy (default 2).
    public var multiplier: Double
    /// The largest delay (default 1h: with 25 attempts, about 6.5 h of retries; see `JobDefaults`).
    public var cap: Duration
    /// The jitter (default full).
    public var jitter: Jitter

    /// Creates a policy; the defaults are Courier's.
    public init(
        strategy: Strategy = .exponential,
        base: Duration = .seconds(1),
        multiplier: Double = 2,
        cap: Duration = .seconds(3600),
        jitter: Jitter = .full
    ) {
        self.strategy = strategy
        self.base = base
        self.multiplier = multiplier
        self.cap = cap
        self.jitter = jitter
    }

    /// Checks the policy: `base` > 0, `cap` ≥ `base`, `multiplier` ≥ 1 and finite.
    /// Errors name the worker flags.
    public func validate() throws(ValidationError) {
        guard base > .zero else {
            throw ValidationError(field: "--backoff-base", message: "must be greater than zero")
        }
        guard cap >= base else {
            throw ValidationError(field: "--backoff-cap", message: "must be at least --backoff-base (\(DurationParser.format(base)))")
        }
        guard multiplier.isFinite, multiplier >= 1 else {
            throw ValidationError(field: "--backoff-multiplier", message: "must be a number of at least 1")
        }
    }

    /// The capped delay before jitter for the attempt that just failed (1-based).
    public func nominalDelay(attempt: Int) -> Duration {
        let n = max(attempt, 1)
        let factor: Double
        switch strategy {
        case .constant: factor = 1
        case .linear: factor = Double(n)
        case .exponential: factor = pow(max(multiplier, 1), Double(n - 1))
        }
        return base.scaled(by: factor, cap: cap)
    }

    /// The delay to wait after `attempt` (the attempt that just failed, 1-based).
    ///
    /// `previousDelay` is the delay used before this attempt, if any; only
    /// decorrelated jitter uses it.
    public func delay(attempt: Int, previousDelay: Duration?, using rng: inout some RandomNumberGenerator) -> Duration {
        let capNanos = max(cap.nanosecondsClamped, 0)
        switch jitter {
        case .none:
            return nominalDelay(attempt: attempt)
        case .full:
            let d = nominalDelay(attempt: attempt).nanosecondsClamped
            return .nanoseconds(Int64.random(in: 0...max(d, 0), using: &rng))
        case .equal:
            let d = max(nominalDelay(attempt: attempt).nanosecondsClamped, 0)
            let half = d / 2
            return .nanoseconds(d - half + Int64.random(in: 0...half, using: &rng))
        case .decorrelated:
            let low = min(max(base.nanosecondsClamped, 0), capNanos)
            let previous = max(previousDelay?.nanosecondsClamped ?? low, low)
            let (tripled, overflow) = previous.multipliedReportingOverflow(by: 3)
            let high = min(overflow ? .max : tripled, capNanos)
            guard high > low else { return .nanoseconds(low) }
            return .nanoseconds(Int64.random(in: low...high, using: &rng))
        }
    }
}
