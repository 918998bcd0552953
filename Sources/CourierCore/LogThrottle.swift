/// Lets a log line about one key (a destination at its limit, say) through at most once
/// per interval, so a condition that holds for every claim logs once, not per job. Pure
/// value: the caller passes the time.
public struct LogThrottle: Sendable {
    /// The shortest time between two lines about one key.
    public let interval: Duration
    /// The most keys remembered; beyond it, keys last logged more than an interval ago are forgotten.
    public let capacity: Int
    private var lastLogged: [String: ContinuousClock.Instant] = [:]

    public init(interval: Duration, capacity: Int = 1000) {
        self.interval = interval
        self.capacity = capacity
    }

    /// Whether a line about `key` may be logged at `now`; records it when so.
    public mutating func allows(_ key: String, at now: ContinuousClock.Instant) -> Bool {
        if let last = lastLogged[key], now - last < interval { return false }
        if lastLogged.count >= capacity {
            lastLogged = lastLogged.filter { now - $0.value < interval }
            if lastLogged.count >= capacity { return false }
        }
        lastLogged[key] = now
        return true
    }
}
