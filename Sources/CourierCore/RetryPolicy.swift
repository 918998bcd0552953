/// The retry settings a worker applies (per-queue defaults come from the database).
public struct RetryPolicy: Sendable, Equatable {
    /// The backoff between attempts.
    public var backoff: BackoffPolicy
    /// The most a server's `Retry-After` can make a job wait (default 1h).
    public var retryAfterCap: Duration

    /// Creates a policy.
    public init(backoff: BackoffPolicy = BackoffPolicy(), retryAfterCap: Duration = .seconds(3600)) {
        self.backoff = backoff
        self.retryAfterCap = retryAfterCap
    }

    /// Checks the backoff and that `retryAfterCap` is not negative.
    public func validate() throws(ValidationError) {
        try backoff.validate()
        guard retryAfterCap >= .zero else {
            throw ValidationError(field: "--retry-after-cap", message: "must not be negative")
        }
    }
}
