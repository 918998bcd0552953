import Foundation
import Postgres

/// Read-only figures for `jobctl stats`.
public enum StatsQueries {
    /// How many jobs one queue holds in one state, and how late the oldest runnable one is.
    public struct QueueDepth: Sendable, Equatable, Encodable {
        public var queue: String
        public var state: String
        public var count: Int
        /// For `available`: seconds since the oldest job became runnable (0 when none is due yet).
        public var oldestDueSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case queue, state, count, oldestDueSeconds = "oldest_due_seconds"
        }

        public init(queue: String, state: String, count: Int, oldestDueSeconds: Double?) {
            self.queue = queue
            self.state = state
            self.count = count
            self.oldestDueSeconds = oldestDueSeconds
        }
    }

    /// Depth per queue and state, plus the number of dead letters not yet replayed.
    public static func queueDepths(on connection: PostgresConnection) throws -> [QueueDepth] {
        try connection.query("""
            select queue, state, count(*)::bigint,
                   extract(epoch from now() - min(run_at) filter (where run_at <= now()))::float8
            from courier.jobs group by queue, state order by queue, state
            """).rows.map { row in
            QueueDepth(
                queue: try row.decode(0, as: String.self), state: try row.decode(1, as: String.self),
                count: try row.decode(2, as: Int.self),
                oldestDueSeconds: try row.decode(1, as: String.self) == "available" ? (try row.decode(3, as: Double?.self) ?? 0) : nil
            )
        }
    }

    /// Dead letters waiting for a decision (not replayed), by reason.
    public static func deadLetterCounts(on connection: PostgresConnection) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try connection.query("""
            select reason, count(*)::bigint from courier.dead_letters where replayed_at is null group by reason
            """).rows {
            counts[try row.decode(0, as: String.self)] = try row.decode(1, as: Int.self)
        }
        return counts
    }

    /// Jobs that succeeded in the last minute, fleet-wide: the archive's count, or, when
    /// the workers keep no archive (`--retention 0`), the success attempts the workers
    /// counted in the last complete minute.
    public static func succeededLastMinute(on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            select greatest(
                (select count(*) from courier.completed_jobs where finished_at > now() - interval '1 minute'),
                (select coalesce(sum(attempts), 0) from courier.attempt_stats
                 where class = 'success' and bucket = date_trunc('minute', now()) - interval '1 minute'))::bigint
            """).rows[0].decode(0, as: Int.self)
    }

    /// Breakers per state (closed ones included only once they have a row).
    public static func breakerStates(on connection: PostgresConnection) throws -> [String: Int] {
        var states: [String: Int] = [:]
        for row in try connection.query("select state, count(*)::bigint from courier.breakers group by state").rows {
            states[try row.decode(0, as: String.self)] = try row.decode(1, as: Int.self)
        }
        return states
    }

    /// A breaker that is not closed, and for how long it has been in its state.
    public struct OpenBreaker: Sendable, Equatable {
        public var destination: String
        public var state: String
        public var seconds: Double
    }

    /// Breakers not closed, longest first (at most `limit`).
    public static func openBreakers(limit: Int, on connection: PostgresConnection) throws -> [OpenBreaker] {
        try connection.query("""
            select destination, state, extract(epoch from now() - changed_at)::float8
            from courier.breakers where state <> 'closed'
            order by changed_at limit \(limit)
            """).rows.map { row in
            OpenBreaker(destination: try row.decode(0, as: String.self), state: try row.decode(1, as: String.self),
                        seconds: max(0, try row.decode(2, as: Double.self)))
        }
    }

    /// How many breaker transitions of each kind were recorded.
    public struct BreakerTransitionCount: Sendable, Equatable {
        public var from: String
        public var to: String
        public var count: Int
    }

    public static func breakerTransitionCounts(on connection: PostgresConnection) throws -> [BreakerTransitionCount] {
        try connection.query("""
            select from_state, to_state, transitions from courier.breaker_transition_totals
            order by from_state, to_state
            """).rows.map { row in
            BreakerTransitionCount(from: try row.decode(0, as: String.self), to: try row.decode(1, as: String.self),
                                   count: try row.decode(2, as: Int.self))
        }
    }

    /// Workers that heartbeat within three intervals and are not shutting down.
    public static func liveWorkerCount(on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            select count(*)::bigint from courier.workers
            where stopping_at is null and heartbeat_at > now() - 3 * heartbeat_interval_ms * interval '1 millisecond'
            """).rows[0].decode(0, as: Int.self)
    }

    /// The live worker that exports the fleet-wide metrics, so that a sum over the fleet
    /// counts them once: the one with the smallest id among those with a recent heartbeat
    /// that are not stopping (any rule all workers compute alike would do).
    public static func fleetReporter(on connection: PostgresConnection) throws -> UUID? {
        try connection.query("""
            select min(id::text)::uuid from courier.workers
            where stopping_at is null and heartbeat_at > now() - 3 * heartbeat_interval_ms * interval '1 millisecond'
            """).rows[0].decode(0, as: UUID?.self)
    }
}
