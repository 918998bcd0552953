import CourierCore
import Foundation
import Postgres

/// `courier.tenants` (sql/0045): the weights and caps of fairness keys, and what each key has
/// running and waiting. A key without a row has weight 1 and no cap.
public enum TenantsTable {
    /// A key's settings.
    public struct Tenant: Sendable, Equatable, Encodable {
        public var fairnessKey: String
        public var weight: Int
        public var maxInFlight: Int?
        public var updatedAt: Date?

        enum CodingKeys: String, CodingKey {
            case fairnessKey = "fairness_key", weight, maxInFlight = "max_in_flight", updatedAt = "updated_at"
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(fairnessKey, forKey: .fairnessKey)
            try c.encode(weight, forKey: .weight)
            try c.encode(maxInFlight, forKey: .maxInFlight)
            try c.encodeIfPresent(updatedAt, forKey: .updatedAt)
        }
    }

    /// A key as `jobctl tenants` shows it: its settings (weight 1 and no cap without a row),
    /// its running jobs, and its waiting jobs the fair claim may take (capped).
    public struct Overview: Sendable, Equatable, Encodable {
        public var tenant: Tenant
        /// Whether the key has a row in `courier.tenants`.
        public var declared: Bool
        public var running: Int
        public var waiting: CappedCount

        enum CodingKeys: String, CodingKey {
            case declared, running, waiting
        }

        /// The tenant's fields, then the load, in one object.
        public func encode(to encoder: Encoder) throws {
            try tenant.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(declared, forKey: .declared)
            try c.encode(running, forKey: .running)
            try c.encode(waiting, forKey: .waiting)
        }
    }

    /// The weights and caps a key may have: `courier.tenants`' checks, which `courier.tenant_set` and jobctl state in words.
    public static let weightRange = 1...1000
    public static let maxInFlightRange = 1...1_000_000

    /// Which settings ``set(_:weight:maxInFlight:clear:on:)`` may clear.
    public enum Field: String, Sendable, CaseIterable {
        case weight
        case maxInFlight = "max_in_flight"
    }

    /// Sets some of `key`'s settings through `courier.tenant_set` (the rest stay as they were; a
    /// new key starts at weight 1 without a cap) and returns the row afterwards.
    public static func set(_ key: String, weight: Int?, maxInFlight: Int?, clear: [Field] = [],
                           on connection: PostgresConnection) throws -> Tenant {
        let rows = try connection.query("""
            select fairness_key, weight, max_in_flight, updated_at
            from courier.tenant_set(fairness_key => \(key)::text, weight => \(weight)::int,
                                    max_in_flight => \(maxInFlight)::int, clear => \(clear.map(\.rawValue))::text[])
            """).rows
        guard let row = rows.first else { throw PostgresError(kind: .protocolViolation, message: "courier.tenant_set returned no row") }
        return Tenant(fairnessKey: try row.decode(0, as: String.self), weight: try row.decode(1, as: Int.self),
                      maxInFlight: try row.decode(2, as: Int?.self), updatedAt: try row.decode(3, as: Date?.self))
    }

    /// Removes `key`'s row (`courier.tenant_reset`): it has weight 1 and no cap again. Returns whether there was one.
    public static func reset(_ key: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("select courier.tenant_reset(\(key)::text)").rows[0].decode(0, as: Bool.self)
    }

    /// The most keys ``overview(limit:on:)`` walks for waiting jobs.
    public static let walkCap = 10_000

    /// Every key with a row, running jobs or waiting jobs, busiest first (running plus waiting),
    /// at most `limit`. Waiting keys come from a skip scan of `jobs_fair_idx` (one descent per
    /// queue and key, at most ``walkCap``), waiting counts stop at ``CappedCount/defaultCap``, and
    /// running jobs are read through `jobs_fair_running_idx`: no table scan.
    public static func overview(limit: Int = 1000, on connection: PostgresConnection) throws -> [Overview] {
        let cap = CappedCount.defaultCap
        return try connection.query("""
            with recursive pairs(queue, fairness_key, n) as (
                (select j.queue, j.fairness_key::text, 1 from courier.jobs j
                 where j.state = 'available' and j.held_since is null and not j.gated and j.fairness_key is not null
                 order by j.queue, j.fairness_key limit 1)
                union all
                select nx.queue, nx.fairness_key, p.n + 1
                from pairs p, lateral (
                    select j.queue, j.fairness_key::text from courier.jobs j
                    where j.state = 'available' and j.held_since is null and not j.gated and j.fairness_key is not null
                      and (j.queue, j.fairness_key) > (p.queue, p.fairness_key)
                    order by j.queue, j.fairness_key limit 1) nx
                where p.n < \(walkCap)
            ), waiting as (
                select p.fairness_key,
                       sum((select count(*) from (select 1 from courier.jobs c
                                                  where c.queue = p.queue and c.fairness_key = p.fairness_key
                                                    and c.state = 'available' and c.held_since is null and not c.gated
                                                  limit \(cap + 1)) x)) as waiting
                from pairs p group by p.fairness_key
            ), running as (
                select j.fairness_key::text, count(*) as running from courier.jobs j
                where j.state = 'running' and j.fairness_key is not null group by j.fairness_key
            ), keys as (
                select t.fairness_key::text from courier.tenants t
                union select fairness_key from waiting
                union select fairness_key from running
            )
            select k.fairness_key, coalesce(t.weight, 1), t.max_in_flight, t.updated_at, t.fairness_key is not null,
                   coalesce(r.running, 0)::bigint, coalesce(w.waiting, 0)::bigint
            from keys k
            left join courier.tenants t on t.fairness_key = k.fairness_key
            left join running r on r.fairness_key = k.fairness_key
            left join waiting w on w.fairness_key = k.fairness_key
            order by coalesce(r.running, 0) + coalesce(w.waiting, 0) desc, k.fairness_key
            limit \(limit)
            """).rows.map { row in
            Overview(tenant: Tenant(fairnessKey: try row.decode(0, as: String.self), weight: try row.decode(1, as: Int.self),
                                    maxInFlight: try row.decode(2, as: Int?.self), updatedAt: try row.decode(3, as: Date?.self)),
                     declared: try row.decode(4, as: Bool.self), running: try row.decode(5, as: Int.self),
                     waiting: CappedCount(counted: min(try row.decode(6, as: Int.self), cap + 1), cap: cap))
        }
    }
}
