import Foundation
import Postgres

/// The spread claim (migration 0024): a few runnable jobs per destination, so one
/// destination's backlog cannot hold back the others' jobs. See ``claimSpread``.
extension JobsTable {
    /// Leases up to `limit` runnable jobs of `queue` to `worker`, at most `perDestination`
    /// of each destination, visiting destinations in text order after `after` (nil: from
    /// the first) and wrapping once, skipping `excluding` and looking at no more than
    /// `visit` destinations. The plain claim's rules apply: a paused queue yields nothing;
    /// destinations held back by their breaker or a Retry-After, held jobs, and destinations
    /// with a traffic policy are skipped; rows other workers hold are skipped. The rows come
    /// back in the order their destinations were visited (the last one's destination is
    /// the next call's `after`).
    public static func claimSpread(queue: String, limit: Int, perDestination: Int, after: String?, excluding: [String],
                                   visit: Int, worker: UUID, leaseMilliseconds: Int,
                                   on connection: PostgresConnection) throws -> [ClaimedJob] {
        try connection.query(PostgresQuery(unsafeSQL: claimSpreadSQL, binds: [
            queue, limit, perDestination, worker, leaseMilliseconds, after, excluding, visit,
        ])).rows.map(ClaimedJob.init(row:))
    }

    /// The spread claim: $1 queue, $2 limit, $3 per destination, $4 worker id, $5 lease in
    /// milliseconds, $6 cursor destination (null: from the first), $7 destinations to skip,
    /// $8 most destinations to look at. Keeps the function's order.
    public static let claimSpreadSQL = ClaimedJob.claimStatement(
        claimed: """
            select *, row_number() over () as visit_order
            from courier.claim_spread($1::text, $2::int, $3::int, $4::uuid, $5::int, $6::text, $7::text[], $8::int)
            """,
        orderBy: "\norder by j.visit_order")
}
