import Foundation
import Postgres

/// Claiming the jobs of destinations with a traffic policy, and the keeper's pass that
/// moves jobs between the runnable, gated and held states (`courier.claim_gated` in
/// sql/schema/jobs.sql, `courier.traffic_maintain` in sql/schema/destinations.sql).
extension JobsTable {
    /// Leases up to `limit` gated jobs of `queue` to `worker` through `courier.claim_gated`:
    /// destination by destination, least recently served first, each within its concurrency
    /// cap (exact fleet-wide), token bucket and retry budget. Waiting for a slot or a token
    /// uses no attempt: such jobs are simply not claimed.
    public static func claimGated(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int,
                                  on connection: PostgresConnection) throws -> [ClaimedJob] {
        try connection.query(PostgresQuery(unsafeSQL: claimGatedSQL, binds: [queue, limit, worker, leaseMilliseconds]))
            .rows.map { row in
                var job = try ClaimedJob(row: row)
                job.claimedThroughGate = true
                return job
            }
    }

    /// The gated claim: $1 queue, $2 limit, $3 worker id, $4 lease in milliseconds.
    public static let claimGatedSQL = ClaimedJob.claimStatement(
        claimed: "select * from courier.claim_gated($1::text, $2::int, $3::uuid, $4::int)")

    /// One bounded pass of `courier.traffic_maintain`: holds, releases, gates and ungates at
    /// most `batch` jobs. Returns how many moved (`batch`: more may wait, call again), or
    /// -1 when another worker's keeper was running.
    public static func trafficMaintain(batch: Int, on connection: PostgresConnection) throws -> Int {
        try connection.query("select courier.traffic_maintain(\(batch)::int)").rows[0].decode(0, as: Int.self)
    }
}
