import Foundation

/// The destinations whose jobs the fleet holds back right now (breaker not closed, a
/// Retry-After in force, or paused), as the ``TrafficKeeper`` last read them (about every
/// second). An HTTP request asks it at the last moment, once a connection is ready and
/// just before the request would be written: a job claimed before its destination was held
/// back, still waiting for a connection to the host (libcurl caps connections per host), is
/// then withheld and handed back without using an attempt, instead of being sent into an
/// outage the fleet already knows about.
///
/// Only a read sent after the job began can withhold it. The claim found the destination
/// free when it took the job, and an older read may predate that: a breaker that just
/// closed would otherwise withhold, and hand back, every job claimed for it until the next
/// read. A breaker's probe is never withheld (it is how the destination gets tested).
final class HeldBackDestinations: @unchecked Sendable {
    /// How many destinations one read keeps at most (a bound on memory, not expected to bite).
    static let readLimit = 10_000

    private let lock = NSLock()
    private var destinations: Set<String> = []
    private var readAt: ContinuousClock.Instant?
    private let now: @Sendable () -> ContinuousClock.Instant

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    /// Replaces what is known with a read whose statement was sent no earlier than `sentAt`.
    func update(_ fresh: [String], sentAt: ContinuousClock.Instant) {
        let set = Set(fresh)
        lock.withLock {
            destinations = set
            readAt = sentAt
        }
    }

    /// Whether the last read found `destination` held back.
    func isHeldBack(_ destination: String) -> Bool {
        lock.withLock { destinations.contains(destination) }
    }

    /// Whether a request to `destination` for a job that began at `began` should be withheld:
    /// a read sent after `began` found the destination held back.
    func withholds(_ destination: String, began: ContinuousClock.Instant) -> Bool {
        lock.withLock {
            guard let readAt, readAt > began else { return false }
            return destinations.contains(destination)
        }
    }

    /// The last-moment check for one request of a job beginning now (see ``withholds(_:began:)``).
    func sendCheck(for destination: String) -> @Sendable () -> Bool {
        let began = now()
        return { [self] in !withholds(destination, began: began) }
    }
}
