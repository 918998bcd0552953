/// One worker's outcomes for one destination since its last flush.
///
/// Successes are counted here instead of being written per job, so a busy
/// destination does not become a hot row. Outcomes that are not breaker
/// evidence (client errors, invalid responses, throttling, cancellations)
/// are not counted at all.
public struct BreakerEvidence: Sendable, Equatable {
    /// Successful attempts.
    public var successes: Int
    /// Attempts whose class counts as a breaker failure.
    public var failures: Int
    /// Failures since the last success (the trailing run).
    public var consecutiveFailures: Int

    /// Creates evidence, empty by default.
    public init(successes: Int = 0, failures: Int = 0, consecutiveFailures: Int = 0) {
        self.successes = successes
        self.failures = failures
        self.consecutiveFailures = consecutiveFailures
    }

    /// Whether nothing was recorded.
    public var isEmpty: Bool { successes == 0 && failures == 0 }

    /// Records one success (`failure == false`) or failure.
    public mutating func record(_ failure: Bool) {
        if failure {
            failures += 1
            consecutiveFailures += 1
        } else {
            successes += 1
            consecutiveFailures = 0
        }
    }

    /// Records a classified attempt; outcomes that are not evidence are ignored.
    public mutating func record(_ classification: Classification) {
        if classification.succeeded {
            record(false)
        } else if classification.countsAsBreakerFailure {
            record(true)
        }
    }

    /// Appends evidence gathered after this one.
    public mutating func append(_ later: BreakerEvidence) {
        successes += later.successes
        failures += later.failures
        consecutiveFailures = later.successes > 0 ? later.consecutiveFailures : consecutiveFailures + later.failures
    }

    /// Whether this evidence alone trips a breaker under `policy`, so it
    /// should be flushed at once.
    public func wouldTrip(_ policy: BreakerPolicy) -> Bool {
        policy.tripReason(consecutiveFailures: consecutiveFailures, successes: successes, failures: failures) != nil
    }
}
