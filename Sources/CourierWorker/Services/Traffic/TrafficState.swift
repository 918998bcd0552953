import CourierCore
import CourierStore
import Foundation

/// What this worker knows of the fleet's destination traffic policies (`courier.destinations`),
/// kept fresh by the ``TrafficKeeper``. The claimer asks it whether to run the gated claim at
/// all (not while no destination has a policy, so those cost nothing) and how soon to look
/// again while gated jobs may be waiting for a slot or a token.
final class TrafficState: @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [DestinationsTable.Traffic] = []
    private var read = false

    /// The gated destinations as last read (empty before the first read).
    var destinations: [DestinationsTable.Traffic] { lock.withLock { rows } }

    /// Whether any destination has a traffic policy, as last read.
    var isActive: Bool { lock.withLock { !rows.isEmpty } }

    /// Whether the policies were read at least once.
    var hasRead: Bool { lock.withLock { read } }

    func update(_ fresh: [DestinationsTable.Traffic]) {
        lock.withLock {
            rows = fresh
            read = true
        }
    }

    /// How soon the claimer should try the gated claim again, or nil when nothing is gated.
    var claimRecheck: Duration? { lock.withLock { Self.claimRecheck(for: rows) } }

    /// Pure: the recheck interval for `rows`. A slot frees when a job ends and a token every
    /// 1/rate seconds, and the gated claim is how either is noticed: look about once per token
    /// of the fastest rated destination (10 ms to 100 ms), and every 50 ms while only caps apply.
    /// Paused destinations alone need no looking (resume notifies).
    static func claimRecheck(for rows: [DestinationsTable.Traffic]) -> Duration? {
        let running = rows.filter { !$0.paused }
        guard !running.isEmpty else { return rows.isEmpty ? nil : .seconds(1) }
        let fastest = running.compactMap(\.ratePerSecond).max()
        guard let fastest, fastest > 0 else { return .milliseconds(50) }
        let perToken = 1000.0 / fastest
        return .milliseconds(Int64(min(100, max(10, perToken))))
    }
}
