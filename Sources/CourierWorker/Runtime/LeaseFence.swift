/// When a worker may still trust its leases (DESIGN.md invariant 9: a cut-off worker
/// fences itself). Pure: the runtime feeds it the instants at which it proved leases
/// and asks it what to do; tests drive it with chosen instants.
///
/// A lease is proven by a statement that granted or renewed it: a claim, or the
/// heartbeater's renewal on its own connection. The database sets the lease to its own
/// `now()` plus the lease length, and that `now()` is later than the moment the worker
/// *sent* the statement, so measured from the send instant a proven lease certainly
/// lasts `lease`. The fence trusts it for `lease - margin` only: the margin leaves time to
/// abort a request before another worker can rescue the job. A worker whose last proof is
/// older than that claims nothing and aborts the jobs it cannot prove, so one job never
/// runs on two workers at once, however long the database link stays silent.
public struct LeaseFence: Sendable, Equatable {
    /// How long the database grants a lease for.
    public let lease: Duration
    /// How long before a proven lease could expire the worker stops trusting it.
    public let margin: Duration
    /// The send instant of the last renewal that succeeded (nil before the first).
    public private(set) var lastRenewal: ContinuousClock.Instant?

    /// - Parameters:
    ///   - lease: the lease length the worker asks for.
    ///   - margin: nil takes ``defaultMargin(lease:)``.
    public init(lease: Duration, margin: Duration? = nil) {
        self.lease = lease
        self.margin = min(margin ?? Self.defaultMargin(lease: lease), lease / 2)
    }

    /// A fifth of the lease, at least 200 ms and at most 10 s: time enough to abort a
    /// request and for its connection to close. Renewals run every third of the lease, so
    /// two renewals in a row fail before the fence closes.
    public static func defaultMargin(lease: Duration) -> Duration {
        max(.milliseconds(200), min(lease / 5, .seconds(10)))
    }

    /// How long after it was proven a lease is trusted.
    public var trustedFor: Duration { lease - margin }

    /// A renewal sent at `sent` succeeded.
    public mutating func renewed(sentAt sent: ContinuousClock.Instant) {
        lastRenewal = max(lastRenewal ?? sent, sent)
    }

    /// Whether the worker may claim: the heartbeater proved its leases within `trustedFor`.
    /// False before the first renewal (a worker that never reached the database claims nothing).
    public func mayClaim(now: ContinuousClock.Instant) -> Bool {
        guard let lastRenewal else { return false }
        return now < lastRenewal + trustedFor
    }

    /// The instant after which a lease proven at `provenAt` is no longer trusted.
    public func deadline(provenAt: ContinuousClock.Instant) -> ContinuousClock.Instant {
        provenAt + trustedFor
    }

    /// Whether a lease proven at `provenAt` stops being trusted within `window` of `now`.
    public func expires(provenAt: ContinuousClock.Instant, within window: Duration, of now: ContinuousClock.Instant) -> Bool {
        deadline(provenAt: provenAt) < now + window
    }

    /// Whether a lease proven at `provenAt` must be given up (aborted, or not started) at `now`.
    public func isUntrusted(provenAt: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Bool {
        now >= deadline(provenAt: provenAt)
    }
}
