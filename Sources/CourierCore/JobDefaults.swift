/// The defaults of a job that its enqueuer leaves out, written once for Swift; the SQL
/// doors (`courier.enqueue`, `courier.enqueue_job`, the `courier.jobs` column defaults)
/// state the same values, and `JobDefaultsAgreementTests` holds the two together.
///
/// Why 25 attempts: with the workers' default backoff (exponential from 1 s, doubling,
/// capped at 1 h, full jitter) 25 attempts span about 6.5 hours on average, and more than
/// an hour in practically every case (`OutageSurvivalTests` checks the spread), so a
/// destination that is down for a lunch break, a deploy or an hour-long incident costs no
/// job and needs no person. River uses 25 attempts (about three weeks with its longer
/// backoff), Oban 20. There is no default deadline: the attempts bound every job already
/// (at most about 25 h with the default caps, a Retry-After included), and a deadline is
/// the enqueuer's statement about when a result stops being useful, which only the
/// enqueuer knows. A job that has one may wait out throttling without using attempts
/// (see `RetryDecider`).
public enum JobDefaults {
    /// Attempts before a job goes to the dead letters as `exhausted`.
    public static let maxAttempts = 25
    /// The per-attempt request timeout.
    public static let timeoutMilliseconds = 30_000
    /// The HTTP method.
    public static let method = "POST"
    /// The queue.
    public static let queue = "default"
    /// The priority (smaller runs first).
    public static let priority = 0
}
