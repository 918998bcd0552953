import Foundation
import Postgres

/// The fair claim (`courier.claim_fair`, sql/0045; today's definition in sql/schema/jobs.sql):
/// a queue that has jobs with fairness keys is claimed by weighted round robin over its keys,
/// the default key (jobs without one) among them. See ``claimFair``.
extension JobsTable {
    /// Where a worker's round over a queue's keys stands: the key visited last, and how many
    /// jobs of its quantum are left (0: the next call moves on to the next key). The start
    /// value is ``start``; only ``claimFair`` makes others.
    public struct FairCursor: Sendable, Equatable {
        /// The key visited last: "" for the default key, nil before a round's start.
        public var key: String?
        public var left: Int

        public init(key: String?, left: Int) {
            self.key = key
            self.left = left
        }

        /// Before the first key of a round.
        public static let start = FairCursor(key: nil, left: 0)
    }

    /// What one fair claim took, and where its round stopped.
    public struct FairRound: Sendable, Equatable {
        public var jobs: [ClaimedJob]
        public var cursor: FairCursor
        /// Per key ("" for the default key) the position of the last job taken: where the
        /// next claim of that key may start (see ``claimFair``'s `bounds`).
        public var last: [String: ClaimPosition] = [:]
        /// Jobs taken per key ("" for the default key).
        public var claimedPerKey: [String: Int] = [:]
    }

    /// Leases up to `limit` due jobs of `queue` to `worker`, going on with the round at
    /// `cursor`: each key with waiting jobs (the default key first) gets up to its weight
    /// (`courier.tenants`, 1 without a row) times `quantum` jobs per visit, fewer when its
    /// `max_in_flight` leaves less room; within a key, priority then `run_at` order. The
    /// plain claim's rules apply: a paused queue yields nothing, jobs of destinations held
    /// back or with a traffic policy are left to their own claims, rows other workers hold are
    /// skipped. At most `visit` keys are looked at.
    ///
    /// `bounds`: per key, where this worker's last claim of it stopped (``FairRound/last``).
    /// A key's jobs are then taken after that position first, and from the start only when
    /// that comes back short: claimed jobs leave dead index entries at the head of each key's
    /// range until VACUUM, which a claim from the start would step over every time.
    public static func claimFair(queue: String, limit: Int, cursor: FairCursor, quantum: Int, visit: Int,
                                 bounds: [String: ClaimPosition] = [:], worker: UUID, leaseMilliseconds: Int,
                                 on connection: PostgresConnection) throws -> FairRound {
        var round = FairRound(jobs: [], cursor: cursor)
        let keys = Array(bounds.keys)
        let positions = keys.map { bounds[$0]! }
        for row in try connection.query(PostgresQuery(unsafeSQL: claimFairSQL, binds: [
            queue, limit, worker, leaseMilliseconds, cursor.key, cursor.left, quantum, visit,
            keys, positions.map(\.priority), positions.map(\.runAtMicroseconds), positions.map(\.id),
        ])).rows {
            // The last row carries no job, only where the round stopped.
            let n = ClaimedJob.columnCount
            if try row.decode(0, as: Int64?.self) == nil {
                round.cursor = FairCursor(key: try row.decode(n, as: String?.self), left: try row.decode(n + 1, as: Int?.self) ?? 0)
            } else {
                let job = try ClaimedJob(row: row)
                let key = try row.decode(n + 2, as: String?.self) ?? ""
                let position = ClaimPosition(priority: try row.decode(n + 3, as: Int.self),
                                             runAtMicroseconds: try row.decode(n + 4, as: Int64.self), id: job.id)
                if round.last[key].map({ $0 < position }) ?? true { round.last[key] = position }
                round.claimedPerKey[key, default: 0] += 1
                round.jobs.append(job)
            }
        }
        return round
    }

    /// The fair claim: $1 queue, $2 limit, $3 worker id, $4 lease in milliseconds, $5 and $6
    /// the cursor (key, quantum left), $7 quantum, $8 most keys to look at, $9-$12 the bounds
    /// (keys, priorities, run_at in microseconds, ids). Keeps the function's order; the row
    /// without a job comes last. Each job comes with its key and position.
    public static let claimFairSQL = ClaimedJob.claimStatement(
        claimed: """
            select (f.job).*, f.cursor_key, f.cursor_left, row_number() over () as visit_order
            from courier.claim_fair($1::text, $2::int, $3::uuid, $4::int, $5::text, $6::int, $7::int, $8::int,
                                    $9::text[], $10::int[], $11::bigint[], $12::bigint[]) f
            """,
        extraColumns: ", j.cursor_key, j.cursor_left, j.fairness_key, j.priority, (extract(epoch from j.run_at) * 1000000)::bigint",
        orderBy: "\norder by j.visit_order")

    /// Which of `queues` have jobs with a fairness key waiting (`courier.queues_with_fairness_keys`):
    /// those are claimed with ``claimFair``.
    public static func queuesWithFairnessKeys(_ queues: [String], on connection: PostgresConnection) throws -> Set<String> {
        Set(try connection.query("select courier.queues_with_fairness_keys(\(queues)::text[])").rows.map {
            try $0.decode(0, as: String.self)
        })
    }
}
