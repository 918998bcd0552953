import CourierCore
import CourierStore

/// The retry policy each queue runs with: the worker's flags, overridden by the
/// fleet-wide `courier.queue_settings` row of that queue where one exists.
struct QueuePolicies: Sendable {
    let base: RetryPolicy
    private(set) var overrides: [String: RetryPolicy] = [:]

    init(base: RetryPolicy) { self.base = base }

    func policy(for queue: String) -> RetryPolicy { overrides[queue] ?? base }

    /// Rebuilds the overrides from the table's rows; invalid combinations keep the base.
    mutating func update(_ rows: [QueueSettingsTable.Settings]) {
        var next: [String: RetryPolicy] = [:]
        for row in rows {
            var policy = base
            if let text = row.backoff, let strategy = BackoffPolicy.Strategy(rawValue: text) { policy.backoff.strategy = strategy }
            if let ms = row.backoffBaseMilliseconds { policy.backoff.base = .milliseconds(ms) }
            if let ms = row.backoffCapMilliseconds { policy.backoff.cap = .milliseconds(ms) }
            if let multiplier = row.backoffMultiplier { policy.backoff.multiplier = multiplier }
            if let text = row.jitter, let jitter = BackoffPolicy.Jitter(rawValue: text) { policy.backoff.jitter = jitter }
            if let ms = row.retryAfterCapMilliseconds { policy.retryAfterCap = .milliseconds(ms) }
            if (try? policy.validate()) != nil { next[row.queue] = policy }
        }
        overrides = next
    }
}
