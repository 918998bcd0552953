import Foundation

/// Decides what to do with a job after an attempt. Pure: the clock and the
/// random source are parameters.
///
/// The rules, in order:
/// 1. success → `succeed`;
/// 1a. an attempt an operator cancelled while it ran → `cancelled`; one aborted at
///    shutdown after the grace (it may have been sent) → `ambiguous` unless safe to
///    repeat, `exhausted` on the last attempt, else retried at once;
/// 2. not retryable → dead letter: `invalid_response`, `cancelled`, or `permanent`
///    (client errors, 3xx, refused destinations);
/// 3. may have been delivered, and the method is not idempotent and the job has
///    no idempotency key → `ambiguous` (after that single attempt);
/// 4. `attempt >= maxAttempts` → `exhausted`, except for a throttled answer of a job
///    with a deadline (see ``usesAttempt(_:job:)``);
/// 5. delay = max(backoff, min(Retry-After, retryAfterCap));
/// 6. now + delay after the deadline → `deadline` at once, without a useless wait;
/// 7. otherwise retry at now + delay; with a `Retry-After`, the destination
///    also gets a not-before time of now + the capped `Retry-After`.
public enum RetryDecider {
    /// Why an attempt was cut short by the worker's side rather than ended by the destination.
    public enum Interruption: Sendable, Equatable {
        /// An operator cancelled the job while it ran.
        case cancelledByOperator
        /// The shutdown grace ran out and the request was aborted mid-flight.
        case abortedAtShutdown
    }

    /// Whether a failed attempt that is retried counts against the job's `maxAttempts`.
    ///
    /// The rule for throttling: a throttled answer (429, or 503 with Retry-After: the
    /// server said "not processed, come back later") uses no attempt when the job has a
    /// deadline, which then bounds how long it may wait; the retry still waits at least
    /// the backoff and the server's (capped) Retry-After. A job without a deadline has
    /// nothing else to bound it, so there a throttled answer uses an attempt like any
    /// failure (with the default 25 attempts and 1 h backoff cap that is still hours of
    /// throttling). Every other failure uses its attempt.
    public static func usesAttempt(_ classification: Classification, job: JobRetryFacts) -> Bool {
        !(classification.errorClass == .throttled && job.deadline != nil)
    }

    /// Applies the rules above.
    public static func decide(
        _ classification: Classification,
        job: JobRetryFacts,
        policy: RetryPolicy,
        now: Date,
        interruption: Interruption? = nil,
        rng: inout some RandomNumberGenerator
    ) -> JobDecision {
        if classification.succeeded { return .succeed }
        switch interruption {
        case .cancelledByOperator:
            return .deadLetter(.cancelled)
        case .abortedAtShutdown:
            if !job.isSafeToRepeat { return .deadLetter(.ambiguous) }
            if job.attempt >= job.maxAttempts { return .deadLetter(.exhausted) }
            return .retry(at: now, delay: .zero, destinationNotBefore: nil)
        case nil:
            break
        }
        if let reason = classification.permanentReason { return .deadLetter(reason) }
        if classification.mayHaveBeenDelivered && !job.isSafeToRepeat { return .deadLetter(.ambiguous) }
        if job.attempt >= job.maxAttempts && usesAttempt(classification, job: job) { return .deadLetter(.exhausted) }

        let backoff = policy.backoff.delay(attempt: job.attempt, previousDelay: job.previousDelay, using: &rng)
        let serverDelay = classification.retryAfter.map { min(max($0, .zero), max(policy.retryAfterCap, .zero)) }
        let delay = max(backoff, serverDelay ?? .zero)
        let at = now.adding(delay)
        if let deadline = job.deadline, at > deadline { return .deadLetter(.deadline) }
        return .retry(at: at, delay: delay, destinationNotBefore: serverDelay.map { now.adding($0) })
    }
}
