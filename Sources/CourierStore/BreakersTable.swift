import Foundation
import Postgres

/// Statements about `courier.breakers`: one row per destination that has needed one.
public enum BreakersTable {
    /// The destinations whose jobs are held back right now, by their breaker (not closed,
    /// or a Retry-After pause in force: `courier.breakers_holding_back()`, the claim's rule
    /// as a set) or a pause (`jobctl destination pause`); at most `limit`, in name order.
    /// Every worker reads this each second, so it reads only those rows, through partial
    /// indexes (a paused destination is gated), never the tables whole (the indexes:
    /// sql/schema/breakers.sql, sql/schema/destinations.sql).
    public static func heldBack(limit: Int, on connection: PostgresConnection) throws -> [String] {
        try connection.query(PostgresQuery(unsafeSQL: heldBackSQL, binds: [limit])).rows.map { try $0.decode(0, as: String.self) }
    }

    /// ``heldBack(limit:on:)``'s statement: $1 the limit. Public so tests can measure what it reads.
    public static let heldBackSQL = """
        select h.destination from courier.breakers_holding_back() h
        union
        select d.destination from courier.destinations d where d.gated and d.paused
        order by 1
        limit $1
        """

    /// Holds a destination back until now + `milliseconds` (Retry-After). Its waiting
    /// jobs are not claimed meanwhile and so use no attempts. Never shortens a pause.
    /// Through `courier.breaker_pause`, so `courier_worker` needs no write privilege on the table.
    public static func pause(destination: String, milliseconds: Int64, on connection: PostgresConnection) throws {
        try connection.query("select courier.breaker_pause(\(destination), \(milliseconds))")
    }
}

extension BreakersTable {
    /// Deletes one batch of breaker events older than `milliseconds`, oldest first through
    /// `breaker_events_at_idx`; rows a concurrent prune holds are skipped. Returns how many.
    /// Through `courier.breaker_events_prune` (the worker role cannot delete events itself).
    public static func pruneEvents(olderThanMilliseconds milliseconds: Int64, batch: Int = 5000, now: Date? = nil,
                                   on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            select courier.breaker_events_prune(\(milliseconds), \(batch)::int, \(now)::timestamptz)
            """).rows[0].decode(0, as: Int.self)
    }

    /// The rules a worker reports evidence under; the fleet should share one policy.
    public struct ReportPolicy: Sendable, Equatable {
        public var failureThreshold: Int
        public var windowMilliseconds: Int64
        public var minimumVolume: Int
        public var failureRate: Double
        /// The nominal first cooldown (`--breaker-cooldown`); a failed probe doubles it.
        public var cooldownMilliseconds: Int64
        public var cooldownMaxMilliseconds: Int64
        public var probeLeaseMilliseconds: Int64
        /// The open period of a trip from closed: the nominal cooldown times the jitter
        /// factor the worker drew. Nil opens for the nominal cooldown.
        public var openMilliseconds: Int64?
        public init(failureThreshold: Int, windowMilliseconds: Int64, minimumVolume: Int, failureRate: Double,
                    cooldownMilliseconds: Int64, cooldownMaxMilliseconds: Int64, probeLeaseMilliseconds: Int64) {
            self.failureThreshold = failureThreshold
            self.windowMilliseconds = windowMilliseconds
            self.minimumVolume = minimumVolume
            self.failureRate = failureRate
            self.cooldownMilliseconds = cooldownMilliseconds
            self.cooldownMaxMilliseconds = cooldownMaxMilliseconds
            self.probeLeaseMilliseconds = probeLeaseMilliseconds
        }
    }

    /// Adds one worker's aggregated outcomes for a destination; may open the breaker.
    /// Returns the breaker's state afterwards.
    @discardableResult
    public static func report(destination: String, successes: Int, failures: Int, trailingFailures: Int, worker: String,
                              policy: ReportPolicy, on connection: PostgresConnection) throws -> String {
        try connection.query("""
            select courier.breaker_report(\(destination)::text, \(successes)::int, \(failures)::int, \(trailingFailures)::int,
                \(worker)::text, \(policy.failureThreshold)::int, \(policy.windowMilliseconds)::bigint, \(policy.minimumVolume)::int,
                \(policy.failureRate)::float8, \(policy.cooldownMilliseconds)::bigint,
                \(policy.openMilliseconds ?? policy.cooldownMilliseconds)::bigint)
            """).rows[0].decode(0, as: String.self)
    }

    /// Destinations whose breaker is due a probe and that have runnable jobs on `queues`.
    ///
    /// Driven from the (few) due breakers: the LATERAL ... LIMIT 1 looks up one runnable
    /// job per due breaker through `jobs_destination_idx`. Written as `exists (...)`, the
    /// planner turned it into a semi-join that scanned every waiting job (O(backlog) on
    /// every maintenance tick of every worker: 13 ms per call at 50k waiting jobs).
    /// `b.state <> 'closed'` is breakers_not_closed_idx's predicate, so the breakers read are
    /// the few not closed, not every destination that ever had one (sql/schema/breakers.sql).
    public static func dueForProbe(queues: [String], on connection: PostgresConnection) throws -> [String] {
        try connection.query(PostgresQuery(unsafeSQL: dueForProbeSQL, binds: [queues])).rows.map { try $0.decode(0, as: String.self) }
    }

    /// ``dueForProbe(queues:on:)``'s statement: $1 the queues. Public so tests can measure what it reads.
    public static let dueForProbeSQL = """
        select b.destination from courier.breakers b
        cross join lateral (
            select 1 from courier.jobs j
            where j.destination = b.destination and j.state = 'available' and j.queue = any($1::text[])
              and j.run_at <= now()
            limit 1) runnable
        where b.state <> 'closed' and not b.forced
          and (b.not_before is null or b.not_before <= now())
          and ((b.state = 'open' and b.open_until <= now()) or (b.state = 'half_open' and b.probe_lease_until < now()))
        """

    /// Renews the probe lease `worker` holds for `destination` while its request runs.
    /// Returns false when the probe's generation is no longer current (taken over or settled).
    @discardableResult
    public static func renewProbe(destination: String, generation: Int64, worker: UUID, probeLeaseMilliseconds: Int64,
                                  on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            select courier.breaker_probe_renew(\(destination)::text, \(generation)::bigint, \(worker)::uuid, \(probeLeaseMilliseconds)::bigint)
            """).rows[0].decode(0, as: Bool?.self) ?? false
    }

    /// Tries to win the fleet's single probe for a destination. Returns its generation when won.
    public static func tryProbe(destination: String, worker: UUID, probeLeaseMilliseconds: Int64,
                                on connection: PostgresConnection) throws -> Int64? {
        try connection.query("select courier.breaker_try_probe(\(destination)::text, \(worker)::uuid, \(probeLeaseMilliseconds)::bigint)")
            .rows[0].decode(0, as: Int64?.self)
    }

    /// Applies a probe's outcome if its generation is still current. Returns the new
    /// state, or nil when the result was stale.
    @discardableResult
    public static func probeResult(destination: String, generation: Int64, succeeded: Bool, worker: String,
                                   policy: ReportPolicy, jitter: Double, on connection: PostgresConnection) throws -> String? {
        try connection.query("""
            select courier.breaker_probe_result(\(destination)::text, \(generation)::bigint, \(succeeded)::boolean, \(worker)::text,
                \(policy.cooldownMilliseconds)::bigint, \(policy.cooldownMaxMilliseconds)::bigint, \(jitter)::float8)
            """).rows[0].decode(0, as: String?.self)
    }

    /// Gives a won probe back without a verdict (no job to probe with, or the probe was
    /// cancelled): the breaker is open and due again at once. False when stale.
    @discardableResult
    public static func abandonProbe(destination: String, generation: Int64, worker: String,
                                    on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            select courier.breaker_probe_abandon(\(destination)::text, \(generation)::bigint, \(worker)::text)
            """).rows[0].decode(0, as: Bool.self)
    }

    /// The operator's actions. Returns the state before.
    public enum ForceAction: String, Sendable, CaseIterable { case open, close, reset }

    /// Whether anything uses `destination`: a breaker row, a waiting job or a dead
    /// letter. A breaker forced for a destination nothing uses is usually a typo.
    public static func isKnown(destination: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            select exists (select 1 from courier.breakers where destination = \(destination))
                or exists (select 1 from courier.jobs where destination = \(destination) and state = 'available')
                or exists (select 1 from courier.dead_letters where destination = \(destination))
            """).rows[0].decode(0, as: Bool.self)
    }

    @discardableResult
    public static func force(destination: String, action: ForceAction, actor: String = "operator",
                             on connection: PostgresConnection) throws -> String {
        try connection.query("select courier.breaker_force(\(destination)::text, \(action.rawValue)::text, \(actor)::text)")
            .rows[0].decode(0, as: String.self)
    }

    /// A breaker as `jobctl breakers` shows it.
    public struct View: Sendable, Equatable, Encodable {
        public var destination: String
        public var state: String
        public var since: Date
        public var forced: Bool
        public var consecutiveFailures: Int
        public var windowFailures: Int
        public var windowSuccesses: Int
        public var nextProbeAt: Date?
        public var cooldownMilliseconds: Int64
        public var notBefore: Date?
        public var waitingJobs: Int
        public var openedCount: Int64
        public var openMillisecondsTotal: Int64
        public var deferredJobs: Int64

        enum CodingKeys: String, CodingKey {
            case destination, state, since, forced, consecutiveFailures = "consecutive_failures"
            case windowFailures = "window_failures", windowSuccesses = "window_successes", nextProbeAt = "next_probe_at"
            case cooldownMilliseconds = "cooldown_ms", notBefore = "not_before", waitingJobs = "waiting_jobs"
            case openedCount = "opened_count", openMillisecondsTotal = "open_ms_total", deferredJobs = "deferred_jobs"
        }
    }

    public static func list(destination: String? = nil, on connection: PostgresConnection) throws -> [View] {
        try connection.query("""
            select b.destination, b.state, b.changed_at, b.forced, b.consecutive_failures, b.window_failures,
                   b.window_successes, case when b.state = 'open' and not b.forced then b.open_until end, b.cooldown_ms,
                   case when b.not_before > now() then b.not_before end,
                   (select count(*) from courier.jobs j where j.destination = b.destination and j.state = 'available')::bigint,
                   b.opened_count,
                   b.open_ms_total + case when b.state = 'open' then (extract(epoch from now() - b.changed_at) * 1000)::bigint else 0 end,
                   b.deferred_jobs
            from courier.breakers b
            where \(destination)::text is null or b.destination = \(destination)
            order by b.state <> 'closed' desc, b.destination
            """).rows.map { row in
            View(destination: try row.decode(0, as: String.self), state: try row.decode(1, as: String.self),
                 since: try row.decode(2, as: Date.self), forced: try row.decode(3, as: Bool.self),
                 consecutiveFailures: try row.decode(4, as: Int.self), windowFailures: try row.decode(5, as: Int.self),
                 windowSuccesses: try row.decode(6, as: Int.self), nextProbeAt: try row.decode(7, as: Date?.self),
                 cooldownMilliseconds: try row.decode(8, as: Int64.self), notBefore: try row.decode(9, as: Date?.self),
                 waitingJobs: try row.decode(10, as: Int.self), openedCount: try row.decode(11, as: Int64.self),
                 openMillisecondsTotal: try row.decode(12, as: Int64.self), deferredJobs: try row.decode(13, as: Int64.self))
        }
    }
}
