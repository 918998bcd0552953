import Foundation

/// What the retry decision needs to know about the job.
public struct JobRetryFacts: Sendable, Equatable {
    /// The HTTP method (any case).
    public var method: String
    /// Whether the job sends an `Idempotency-Key`.
    public var hasIdempotencyKey: Bool
    /// The attempt that just ran, 1-based.
    public var attempt: Int
    /// The job's `max_attempts`.
    public var maxAttempts: Int
    /// The job's deadline, if any.
    public var deadline: Date?
    /// The delay used before this attempt, if it was a retry (for decorrelated jitter).
    public var previousDelay: Duration?

    /// Creates the facts.
    public init(method: String, hasIdempotencyKey: Bool, attempt: Int, maxAttempts: Int, deadline: Date? = nil, previousDelay: Duration? = nil) {
        self.method = method
        self.hasIdempotencyKey = hasIdempotencyKey
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.deadline = deadline
        self.previousDelay = previousDelay
    }

    /// Whether repeating the request is safe: an idempotent method or an idempotency key.
    public var isSafeToRepeat: Bool {
        hasIdempotencyKey || HTTPMethod.isIdempotent(method)
    }
}
