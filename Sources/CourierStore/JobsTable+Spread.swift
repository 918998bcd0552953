import Foundation
import Postgres

/// The spread claim (`courier.claim_spread`, sql/schema/jobs.sql): a few runnable jobs
/// per destination, so one destination's backlog cannot hold back the others' jobs. See
/// ``claimSpread``.
extension JobsTable {
    /// What one spread claim took, and where it stopped looking.
    public struct SpreadRound: Sendable, Equatable {
        /// The jobs taken, in the order their destinations were visited.
        public var jobs: [ClaimedJob]
        /// The last destination looked at, whether or not a job was taken from it: the next
        /// call's `after`. Nil when none was looked at.
        public var visited: String?
        public init(jobs: [ClaimedJob], visited: String?) {
            self.jobs = jobs
            self.visited = visited
        }
    }

    /// Leases up to `limit` runnable jobs of `queue` to `worker`, at most `perDestination`
    /// of each destination, visiting destinations in text order after `after` (nil: from
    /// the first) and wrapping once, skipping `excluding` and looking at no more than
    /// `visit` destinations. The plain claim's rules apply: a paused queue yields nothing;
    /// destinations held back by their breaker or a Retry-After, held jobs, and destinations
    /// with a traffic policy are skipped; a destination with no due job of `queue` is passed
    /// over after one look; rows other workers hold are skipped. The result says which
    /// destination was visited last, taken from or not, so the next call goes on after it
    /// (`courier.claim_spread_round`, sql/schema/jobs.sql).
    public static func claimSpread(queue: String, limit: Int, perDestination: Int, after: String?, excluding: [String],
                                   visit: Int, worker: UUID, leaseMilliseconds: Int,
                                   on connection: PostgresConnection) throws -> SpreadRound {
        var round = SpreadRound(jobs: [], visited: nil)
        for row in try connection.query(PostgresQuery(unsafeSQL: claimSpreadSQL, binds: [
            queue, limit, perDestination, worker, leaseMilliseconds, after, excluding, visit,
        ])).rows {
            // The last row carries no job, only where the walk stopped.
            if try row.decode(0, as: Int64?.self) == nil {
                round.visited = try row.decode(ClaimedJob.columnCount, as: String?.self)
            } else {
                round.jobs.append(try ClaimedJob(row: row))
            }
        }
        return round
    }

    /// The spread claim: $1 queue, $2 limit, $3 per destination, $4 worker id, $5 lease in
    /// milliseconds, $6 cursor destination (null: from the first), $7 destinations to skip,
    /// $8 most destinations to look at. Keeps the function's order; the row without a job
    /// comes last.
    public static let claimSpreadSQL = ClaimedJob.claimStatement(
        claimed: """
            select (s.job).*, s.visited, row_number() over () as visit_order
            from courier.claim_spread_round($1::text, $2::int, $3::int, $4::uuid, $5::int, $6::text, $7::text[], $8::int) s
            """,
        extraColumns: ", j.visited",
        orderBy: "\norder by j.visit_order")
}
