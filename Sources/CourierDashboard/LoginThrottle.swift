import Foundation

/// Limits how fast the dashboard's token can be guessed. Every check of a presented
/// token (the login form, an `Authorization: Bearer` header) first takes one attempt
/// from two token buckets, the client address's and everyone's together; while
/// either is empty the attempt is refused (429 with Retry-After) without the token
/// being looked at. A check that passes gives its attempt back, so the right token (a
/// browser logging in, a script polling the API) never wears the buckets down: only
/// failures do.
///
/// With the defaults a client address gets 10 failed attempts, then one every 6
/// seconds; all addresses together get 30, then one every 2 seconds. At most 43,200
/// guesses a day then reach the check, from however many addresses. The price is that
/// during such a flood a script with the right bearer token may be told 429 too;
/// browsers already logged in are not (a session cookie is not a guess).
public final class LoginThrottle: @unchecked Sendable {
    public struct Policy: Sendable, Equatable {
        /// Attempts one client address may fail in a row. Default 10.
        public var clientBurst = 10
        /// How often a client address gets one attempt back. Default every 6 s.
        public var clientRefill: Duration = .seconds(6)
        /// Attempts every address together may fail in a row. Default 30.
        public var globalBurst = 30
        /// How often the shared bucket gets one attempt back. Default every 2 s.
        public var globalRefill: Duration = .seconds(2)
        /// Client addresses remembered at most. Default 10,000; beyond it, addresses not
        /// yet known share one bucket (the shared one still bounds them all).
        public var maximumClients = 10_000

        public init() {}
    }

    /// What ``attempt(client:_:)`` found.
    public enum Outcome: Sendable, Equatable {
        /// The check ran and passed; the attempt was given back.
        case passed
        /// The check ran and failed; the attempt stays spent.
        case failed
        /// Refused without running the check; try again after this long.
        case throttled(retryAfter: Duration)
    }

    /// The key clients share once ``Policy/maximumClients`` are remembered.
    static let overflowKey = "(other addresses)"

    public let policy: Policy
    private let now: @Sendable () -> ContinuousClock.Instant
    private let lock = NSLock()
    private var global: TokenBucket
    private var clients: [String: TokenBucket] = [:]

    /// - Parameter now: the clock attempts come back by (injected for tests).
    public init(policy: Policy = Policy(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.policy = policy
        self.now = now
        self.global = TokenBucket(capacity: policy.globalBurst, refill: policy.globalRefill, now: now())
    }

    /// Runs `check` (does the presented token match?) for `client` (its address) when
    /// both buckets hold an attempt; otherwise refuses without running it.
    public func attempt(client: String, _ check: () -> Bool) -> Outcome {
        let taken = lock.withLock { () -> (key: String, wait: Duration?) in
            let now = now()
            let key = clientKey(client, now: now)
            var bucket = clients[key] ?? TokenBucket(capacity: policy.clientBurst, refill: policy.clientRefill, now: now)
            let wait = max(bucket.waitForOne(at: now), global.waitForOne(at: now))
            if wait == .zero {
                bucket.take(at: now)
                global.take(at: now)
            }
            clients[key] = bucket
            return (key, wait == .zero ? nil : wait)
        }
        if let wait = taken.wait { return .throttled(retryAfter: wait) }
        guard check() else { return .failed }
        lock.withLock {
            clients[taken.key]?.giveBack()
            global.giveBack()
        }
        return .passed
    }

    /// The bucket key for `client`: its own while there is room (after forgetting the
    /// addresses whose buckets have filled up again, which are as good as new), else the
    /// shared overflow key. Call with the lock held.
    private func clientKey(_ client: String, now: ContinuousClock.Instant) -> String {
        if clients[client] != nil || clients.count < policy.maximumClients { return client }
        clients = clients.filter { !$0.value.isFull(at: now) }
        return clients.count < policy.maximumClients ? client : Self.overflowKey
    }

    /// Whole seconds for a `Retry-After` header: `wait` rounded up, at least 1.
    public static func retryAfterSeconds(_ wait: Duration) -> Int {
        let (seconds, attoseconds) = wait.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}

/// A token bucket: up to `capacity` attempts, one coming back every `refill`, kept as
/// the instant it is full again (so the arithmetic is exact durations, no fractions).
/// Pure value: the caller passes the time.
struct TokenBucket: Sendable, Equatable {
    let capacity: Int
    let refill: Duration
    /// When every attempt is back: at or before now, the bucket is full.
    private(set) var fullAt: ContinuousClock.Instant

    init(capacity: Int, refill: Duration, now: ContinuousClock.Instant) {
        self.capacity = max(1, capacity)
        self.refill = refill
        self.fullAt = now
    }

    func isFull(at now: ContinuousClock.Instant) -> Bool { fullAt <= now }

    /// How long from `now` until one attempt is there; zero when one is.
    func waitForOne(at now: ContinuousClock.Instant) -> Duration {
        let owed = fullAt - now
        let slack = refill * (capacity - 1)
        return owed > slack ? owed - slack : .zero
    }

    /// Spends one attempt (call when ``waitForOne(at:)`` is zero).
    mutating func take(at now: ContinuousClock.Instant) { fullAt = max(fullAt, now) + refill }

    /// Returns the attempt a passed check took.
    mutating func giveBack() { fullAt = fullAt - refill }
}
