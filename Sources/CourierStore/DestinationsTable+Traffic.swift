import Foundation
import Postgres

extension DestinationsTable {
    /// One destination as `jobctl destinations` and the dashboard show it: its policy,
    /// jobs in flight and waiting, its recent request rate and its breaker.
    public struct Overview: Sendable, Equatable, Encodable {
        public var policy: Policy
        public var inFlight: Int
        public var waiting: Int
        /// Attempts per second over the last one to two minutes (`courier.attempt_stats`).
        public var recentPerSecond: Double
        public var breakerState: String
        /// Fleet-wide counters since the policy row was made: jobs claimed through the
        /// gated claim, claims that found no slot, no token, and retries deferred by the budget.
        public var claimed: Int
        public var slotWaits: Int
        public var tokenWaits: Int
        public var retriesDeferred: Int
        /// The last claim that found the destination at a limit.
        public var limitedAt: Date?

        enum CodingKeys: String, CodingKey {
            case inFlight = "in_flight", waiting, recentPerSecond = "recent_per_second", breakerState = "breaker_state",
                 claimed, slotWaits = "slot_waits", tokenWaits = "token_waits", retriesDeferred = "retries_deferred",
                 limitedAt = "limited_at"
        }

        public func encode(to encoder: any Encoder) throws {
            try policy.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(inFlight, forKey: .inFlight)
            try c.encode(waiting, forKey: .waiting)
            try c.encode(recentPerSecond, forKey: .recentPerSecond)
            try c.encode(breakerState, forKey: .breakerState)
            try c.encode(claimed, forKey: .claimed)
            try c.encode(slotWaits, forKey: .slotWaits)
            try c.encode(tokenWaits, forKey: .tokenWaits)
            try c.encode(retriesDeferred, forKey: .retriesDeferred)
            try c.encode(limitedAt, forKey: .limitedAt)
        }
    }

    /// Every destination with a policy, a breaker, running jobs or attempts in the last
    /// minute (`courier.destination_overview`). Waiting counts walk each listed
    /// destination's waiting jobs: for operators and dashboards, not for hot paths.
    public static func overview(on connection: PostgresConnection) throws -> [Overview] {
        try connection.query("""
            select destination, signing_secret, max_in_flight, rate, burst, slow_start_ms, retry_budget_pct, paused,
                   updated_at, in_flight, waiting, recent_per_second, breaker_state, claimed_total, slot_waits, token_waits,
                   retries_deferred, limited_at,
                   coalesce((select d.propagate_trace from courier.destinations d where d.destination = o.destination), false)
            from courier.destination_overview() o
            """).rows.map { row in
            Overview(
                policy: Policy(destination: try row.decode(0, as: String.self), signingSecret: try row.decode(1, as: String?.self),
                               maxInFlight: try row.decode(2, as: Int?.self), ratePerSecond: try row.decode(3, as: Double?.self),
                               burst: try row.decode(4, as: Int?.self), slowStartMilliseconds: try row.decode(5, as: Int64?.self),
                               retryBudgetPercent: try row.decode(6, as: Double?.self), paused: try row.decode(7, as: Bool.self),
                               propagateTrace: try row.decode(18, as: Bool.self), updatedAt: try row.decode(8, as: Date?.self)),
                inFlight: try row.decode(9, as: Int.self), waiting: try row.decode(10, as: Int.self),
                recentPerSecond: try row.decode(11, as: Double.self), breakerState: try row.decode(12, as: String.self),
                claimed: try row.decode(13, as: Int.self), slotWaits: try row.decode(14, as: Int.self),
                tokenWaits: try row.decode(15, as: Int.self), retriesDeferred: try row.decode(16, as: Int.self),
                limitedAt: try row.decode(17, as: Date?.self))
        }
    }

    /// What a worker's keeper reads every few seconds about the gated destinations: cheap
    /// (the in-flight count walks at most each cap's running jobs).
    public struct Traffic: Sendable, Equatable {
        public var destination: String
        public var maxInFlight: Int?
        public var ratePerSecond: Double?
        public var burst: Int?
        public var slowStartMilliseconds: Int64?
        public var retryBudgetPercent: Double?
        public var paused: Bool
        public var inFlight: Int
        public var claimed: Int
        public var slotWaits: Int
        public var tokenWaits: Int
        public var retriesDeferred: Int
        public var limitedAt: Date?
        public var updatedAt: Date
        public init(destination: String, maxInFlight: Int? = nil, ratePerSecond: Double? = nil, burst: Int? = nil,
                    slowStartMilliseconds: Int64? = nil, retryBudgetPercent: Double? = nil, paused: Bool = false,
                    inFlight: Int = 0, claimed: Int = 0, slotWaits: Int = 0, tokenWaits: Int = 0, retriesDeferred: Int = 0,
                    limitedAt: Date? = nil, updatedAt: Date = Date(timeIntervalSince1970: 0)) {
            self.destination = destination
            self.maxInFlight = maxInFlight
            self.ratePerSecond = ratePerSecond
            self.burst = burst
            self.slowStartMilliseconds = slowStartMilliseconds
            self.retryBudgetPercent = retryBudgetPercent
            self.paused = paused
            self.inFlight = inFlight
            self.claimed = claimed
            self.slotWaits = slotWaits
            self.tokenWaits = tokenWaits
            self.retriesDeferred = retriesDeferred
            self.limitedAt = limitedAt
            self.updatedAt = updatedAt
        }
    }

    /// Every gated destination's policy and fleet-wide counters.
    public static func traffic(on connection: PostgresConnection) throws -> [Traffic] {
        try connection.query("""
            select d.destination, d.max_in_flight, d.rate, d.burst, d.slow_start_ms, d.retry_budget_pct, d.paused,
                   (select count(*) from courier.jobs j where j.destination = d.destination and j.state = 'running' and j.gated),
                   d.claimed_total, d.slot_waits, d.token_waits, d.retries_deferred, d.limited_at, d.updated_at
            from courier.destinations d where d.gated order by d.destination
            """).rows.map { row in
            Traffic(destination: try row.decode(0, as: String.self), maxInFlight: try row.decode(1, as: Int?.self),
                    ratePerSecond: try row.decode(2, as: Double?.self), burst: try row.decode(3, as: Int?.self),
                    slowStartMilliseconds: try row.decode(4, as: Int64?.self), retryBudgetPercent: try row.decode(5, as: Double?.self),
                    paused: try row.decode(6, as: Bool.self), inFlight: try row.decode(7, as: Int.self),
                    claimed: try row.decode(8, as: Int.self), slotWaits: try row.decode(9, as: Int.self),
                    tokenWaits: try row.decode(10, as: Int.self), retriesDeferred: try row.decode(11, as: Int.self),
                    limitedAt: try row.decode(12, as: Date?.self), updatedAt: try row.decode(13, as: Date.self))
        }
    }
}

extension DestinationsTable {
    /// The destinations paused right now, by name.
    public static func paused(on connection: PostgresConnection) throws -> [String] {
        try connection.query("select destination from courier.destinations where paused order by destination")
            .rows.map { try $0.decode(0, as: String.self) }
    }
}
