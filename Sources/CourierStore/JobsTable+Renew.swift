import Foundation
import Postgres

/// Renewing leases (the heartbeater's statement), and finding leases a worker holds
/// without knowing it.
extension JobsTable {
    /// The leases the database says `worker` holds, as (id, lease token), except the jobs of
    /// breakers whose half-open probe `worker` owns (a probe's claim may be in flight on the
    /// prober's own connection). After a claim whose reply was lost, the worker compares
    /// these with what it knows and hands back, unattempted, what it does not know.
    /// Read through jobs_running_idx (leased_by, for running jobs only).
    public static func leasesHeld(worker: UUID, on connection: PostgresConnection) throws -> [(id: Int64, lease: Int64)] {
        try connection.query("""
            select j.id, j.lease_seq from courier.jobs j
            where j.state = 'running' and j.leased_by = \(worker)
              and not exists (select 1 from courier.breakers b
                              where b.destination = j.destination and b.state = 'half_open' and b.probe_owner = \(worker))
            order by j.id
            """).rows.map { (try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)) }
    }

    /// What one renewal did.
    public struct LeaseRenewal: Sendable, Equatable {
        /// The leases renewed, as (id, lease token): still this worker's, under that lease.
        public var renewed: [(id: Int64, lease: Int64)]
        /// Ids among them whose cancellation an operator has requested.
        public var cancelled: [Int64]

        public init(renewed: [(id: Int64, lease: Int64)], cancelled: [Int64]) {
            self.renewed = renewed
            self.cancelled = cancelled
        }

        public static func == (a: LeaseRenewal, b: LeaseRenewal) -> Bool {
            a.renewed.map(\.id) == b.renewed.map(\.id) && a.renewed.map(\.lease) == b.renewed.map(\.lease) && a.cancelled == b.cancelled
        }
    }

    /// Extends the leases `worker` holds for exactly these (id, lease token) pairs, and says
    /// which it renewed: a lease this worker lost (rescued, re-claimed under a later token,
    /// finished) is not renewed, so the worker does not count it as proven.
    ///
    /// A renewal never waits for a row lock: a row locked by someone else is skipped
    /// (`SKIP LOCKED`) and counts as not renewed this round. The one holding it is nearly
    /// always this worker's own acknowledgement of that job, which needs no renewal; so a
    /// renewal and acknowledgements of an overlapping set of jobs cannot deadlock, whatever
    /// order the acknowledgement's plan locks rows in, and a renewal is never held up. A
    /// lease skipped for longer than the fence trusts it is aborted (see `LeaseFence`).
    public static func renewLeases(_ leases: [(id: Int64, lease: Int64)], worker: UUID, leaseMilliseconds: Int,
                                   on connection: PostgresConnection) throws -> LeaseRenewal {
        guard !leases.isEmpty else { return LeaseRenewal(renewed: [], cancelled: []) }
        let ordered = leases.sorted { $0.id < $1.id }
        // `courier.renew_leases` (sql/schema/jobs.sql; by token since 0039): primary key
        // probes and a hash join, one plan whatever the statistics of `courier.jobs` say.
        let rows = try connection.query("""
            select job_id, job_lease, cancel_requested
            from courier.renew_leases(\(ordered.map(\.id))::bigint[], \(ordered.map(\.lease))::bigint[], \(worker)::uuid,
                                      \(leaseMilliseconds)::int)
            """).rows
        var renewal = LeaseRenewal(renewed: [], cancelled: [])
        for row in rows {
            let id = try row.decode(0, as: Int64.self)
            renewal.renewed.append((id, try row.decode(1, as: Int64.self)))
            if try row.decode(2, as: Bool.self) { renewal.cancelled.append(id) }
        }
        renewal.renewed.sort { $0.id < $1.id }
        renewal.cancelled.sort()
        return renewal
    }
}
