import Foundation

/// What happens to a job after an attempt.
public enum JobDecision: Equatable, Sendable {
    /// The job succeeded.
    case succeed
    /// Run the job again at `at` (= now + `delay`). When the server sent
    /// `Retry-After`, `destinationNotBefore` is the (capped) time before which no
    /// job of the destination should be sent.
    case retry(at: Date, delay: Duration, destinationNotBefore: Date?)
    /// Move the job to the dead letters.
    case deadLetter(DeadLetterReason)
}
