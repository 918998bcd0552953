import Foundation
import Postgres

/// Per-destination policy (`courier.destinations`), shared by the fleet: the default
/// signing secret NAME of the destination's jobs, and its traffic policy (concurrency
/// cap, rate and burst, slow start, retry budget, paused). Workers read the signing
/// secret when they claim a job (see `ClaimedJob.columns`) and the traffic policy in the
/// gated claim itself, so a change applies to the next claim.
public enum DestinationsTable {
    /// One destination's row; nil fields are "no policy".
    public struct Policy: Sendable, Equatable, Encodable {
        public var destination: String
        /// The signing secret NAME used for the destination's jobs that name none.
        public var signingSecret: String?
        /// The most requests in flight at once, fleet-wide.
        public var maxInFlight: Int?
        /// The most requests started per second, fleet-wide (a token bucket).
        public var ratePerSecond: Double?
        /// The token bucket's size: how many requests may start at once after a quiet spell.
        public var burst: Int?
        /// How long the destination ramps from 1 request in flight after a breaker closes or a
        /// pause ends: up to its cap (nil: 5 s with a cap), or, without a cap, up to the fleet's
        /// slots (nil or 0: no ramp).
        public var slowStartMilliseconds: Int64?
        /// Retries at most this share (0–100) of the last minute's requests.
        public var retryBudgetPercent: Double?
        public var paused: Bool
        /// Whether the destination's requests carry `traceparent` and `tracestate` (opt-in).
        public var propagateTrace: Bool
        public var createdAt: Date?
        public var updatedAt: Date?

        public init(destination: String, signingSecret: String? = nil, maxInFlight: Int? = nil, ratePerSecond: Double? = nil,
                    burst: Int? = nil, slowStartMilliseconds: Int64? = nil, retryBudgetPercent: Double? = nil,
                    paused: Bool = false, propagateTrace: Bool = false, createdAt: Date? = nil, updatedAt: Date? = nil) {
            self.destination = destination
            self.signingSecret = signingSecret
            self.maxInFlight = maxInFlight
            self.ratePerSecond = ratePerSecond
            self.burst = burst
            self.slowStartMilliseconds = slowStartMilliseconds
            self.retryBudgetPercent = retryBudgetPercent
            self.paused = paused
            self.propagateTrace = propagateTrace
            self.createdAt = createdAt
            self.updatedAt = updatedAt
        }

        /// Whether this row's own settings gate the destination's jobs (any traffic policy; a
        /// slow start of 0 is none), as `courier.traffic_limits` and the pause do in
        /// `courier.destinations.gated`. A sub-key is also gated while its origin has limits
        /// (`origin_limited`, sql/0043), which this row alone cannot tell.
        public var isGated: Bool {
            maxInFlight != nil || ratePerSecond != nil || retryBudgetPercent != nil || paused || (slowStartMilliseconds ?? 0) > 0
        }

        enum CodingKeys: String, CodingKey {
            case destination, signingSecret = "signing_secret", maxInFlight = "max_in_flight", ratePerSecond = "rate_per_second",
                 burst, slowStartMilliseconds = "slow_start_ms", retryBudgetPercent = "retry_budget_percent", paused,
                 propagateTrace = "propagate_trace", createdAt = "created_at", updatedAt = "updated_at"
        }

        public func encode(to encoder: any Encoder) throws {
            // Every policy field appears, null where the destination sets none.
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(destination, forKey: .destination)
            try c.encode(signingSecret, forKey: .signingSecret)
            try c.encode(maxInFlight, forKey: .maxInFlight)
            try c.encode(ratePerSecond, forKey: .ratePerSecond)
            try c.encode(burst, forKey: .burst)
            try c.encode(slowStartMilliseconds, forKey: .slowStartMilliseconds)
            try c.encode(retryBudgetPercent, forKey: .retryBudgetPercent)
            try c.encode(paused, forKey: .paused)
            try c.encode(propagateTrace, forKey: .propagateTrace)
            try c.encodeIfPresent(createdAt, forKey: .createdAt)
            try c.encodeIfPresent(updatedAt, forKey: .updatedAt)
        }
    }

    /// A policy field `merge` can clear (set back to "no policy").
    public enum Field: String, Sendable, CaseIterable {
        case signingSecret = "signing_secret", maxInFlight = "max_in_flight", rate, burst
        case slowStart = "slow_start_ms", retryBudget = "retry_budget_pct"
    }

    static let columns = """
        destination, signing_secret, max_in_flight, rate, burst, slow_start_ms, retry_budget_pct, paused, created_at, updated_at,
        propagate_trace
        """

    /// Every destination's row, by destination.
    public static func all(on connection: PostgresConnection) throws -> [Policy] {
        try connection.query(PostgresQuery(unsafeSQL: "select \(columns) from courier.destinations order by destination"))
            .rows.map(policy)
    }

    /// Sets the fields of `changes` that are not nil, clears the fields in `clear`, and
    /// keeps the destination's other fields, through `courier.destination_set` (which
    /// normalises the destination as enqueue derives it: a URL becomes scheme://host:port,
    /// and refuses bad values with 22023 naming the field). `changes.paused` is ignored:
    /// see ``setPaused(destination:_:on:)``; `changes.propagateTrace` is ignored too: `propagateTrace`
    /// sets it (nil keeps it). Returns the row afterwards.
    public static func merge(_ changes: Policy, clear: [Field] = [], propagateTrace: Bool? = nil,
                             on connection: PostgresConnection) throws -> Policy {
        let rows = try connection.query(PostgresQuery(unsafeSQL: """
            select \(columns) from courier.destination_set(destination => $1::text, signing_secret => $2::text,
                max_in_flight => $3::int, rate => $4::float8, burst => $5::int, slow_start_ms => $6::bigint,
                retry_budget_pct => $7::float8, clear => $8::text[], propagate_trace => $9::boolean)
            """, binds: [changes.destination, changes.signingSecret, changes.maxInFlight, changes.ratePerSecond, changes.burst,
                         changes.slowStartMilliseconds, changes.retryBudgetPercent, clear.map(\.rawValue), propagateTrace]))
        guard let row = rows.rows.first else {
            throw PostgresError(kind: .protocolViolation, message: "courier.destination_set returned no row")
        }
        return try policy(row)
    }

    /// Pauses or resumes a destination (its waiting jobs wait without using attempts;
    /// running ones finish). Returns the row afterwards.
    public static func setPaused(destination: String, _ paused: Bool, on connection: PostgresConnection) throws -> Policy {
        let rows = try connection.query(PostgresQuery(unsafeSQL: """
            select \(columns) from courier.destination_pause(destination => $1::text, paused => $2::boolean)
            """, binds: [destination, paused]))
        guard let row = rows.rows.first else {
            throw PostgresError(kind: .protocolViolation, message: "courier.destination_pause returned no row")
        }
        return try policy(row)
    }

    /// Deletes a destination's row (normalised as in ``merge(_:clear:on:)``). Returns whether there was one.
    public static func remove(destination: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("select courier.destination_reset(\(destination))").rows[0].decode(0, as: Bool.self)
    }

    private static func policy(_ row: PostgresRow) throws -> Policy {
        Policy(destination: try row.decode(0, as: String.self), signingSecret: try row.decode(1, as: String?.self),
               maxInFlight: try row.decode(2, as: Int?.self), ratePerSecond: try row.decode(3, as: Double?.self),
               burst: try row.decode(4, as: Int?.self), slowStartMilliseconds: try row.decode(5, as: Int64?.self),
               retryBudgetPercent: try row.decode(6, as: Double?.self), paused: try row.decode(7, as: Bool.self),
               propagateTrace: try row.decode(10, as: Bool.self),
               createdAt: try row.decode(8, as: Date?.self), updatedAt: try row.decode(9, as: Date?.self))
    }

    /// The destinations whose requests carry trace context (`propagate_trace`), read by
    /// workers every few seconds with the queue settings, so no claim reads more per job.
    public static func propagatingTrace(on connection: PostgresConnection) throws -> [String] {
        try connection.query("select destination from courier.destinations where propagate_trace order by destination")
            .rows.map { try $0.decode(0, as: String.self) }
    }
}
