import Foundation
import Postgres

/// A place in the plain claim's order (priority, run_at, id): where the last claim stopped.
/// A claim started from a position skips every entry of `jobs_runnable_idx` at or before it,
/// dead ones included. That is what keeps the claim cheap while a long transaction elsewhere
/// (a report query, a `pg_dump`) holds the xmin horizon still and the versions of jobs
/// already claimed cannot be vacuumed away. Jobs that land behind a position (released,
/// handed back, rescued, enqueued with an earlier run_at or a lower priority number) are
/// found by the next claim started from nothing (see `ClaimBounds` in the worker).
public struct ClaimPosition: Sendable, Equatable, Comparable {
    public var priority: Int
    /// run_at in microseconds since 1970, exactly as stored (timestamptz has microseconds).
    public var runAtMicroseconds: Int64
    public var id: Int64

    public init(priority: Int, runAtMicroseconds: Int64, id: Int64) {
        self.priority = priority
        self.runAtMicroseconds = runAtMicroseconds
        self.id = id
    }

    public static func < (a: ClaimPosition, b: ClaimPosition) -> Bool {
        (a.priority, a.runAtMicroseconds, a.id) < (b.priority, b.runAtMicroseconds, b.id)
    }
}

/// What one plain claim took, and where the last job it took stands in the claim's order.
public struct ClaimBatch: Sendable, Equatable {
    public var jobs: [ClaimedJob]
    /// The greatest position among `jobs`; nil when none was taken.
    public var last: ClaimPosition?
    public init(jobs: [ClaimedJob], last: ClaimPosition?) {
        self.jobs = jobs
        self.last = last
    }
}

extension JobsTable {
    /// Leases up to `limit` runnable jobs of `queue` to `worker`, in priority, run_at,
    /// id order, skipping rows other workers hold (`FOR UPDATE SKIP LOCKED`) and
    /// destinations that are held back (breaker not closed, or a Retry-After in force).
    /// The claim consumes an attempt; `handBack` returns it for jobs that never ran.
    /// Jobs of destinations with a traffic policy are not taken here (see ``claimGated``):
    /// gated jobs are outside the index it walks, and a job whose destination became
    /// gated before the keeper moved it is locked but left alone. A paused queue yields nothing.
    public static func claim(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int,
                             on connection: PostgresConnection) throws -> [ClaimedJob] {
        try claim(queue: queue, limit: limit, worker: worker, leaseMilliseconds: leaseMilliseconds, after: nil,
                  on: connection).jobs
    }

    /// ``claim(queue:limit:worker:leaseMilliseconds:on:)`` started after `position` (nil: from
    /// the start): only jobs later in the claim's order than `position` are taken.
    public static func claim(queue: String, limit: Int, worker: UUID, leaseMilliseconds: Int, after position: ClaimPosition?,
                             on connection: PostgresConnection) throws -> ClaimBatch {
        let rows: [PostgresRow]
        if let position {
            rows = try connection.query(PostgresQuery(unsafeSQL: claimAfterSQL, binds: [
                queue, limit, worker, leaseMilliseconds, position.priority, position.runAtMicroseconds, position.id,
            ])).rows
        } else {
            rows = try connection.query(PostgresQuery(unsafeSQL: claimSQL, binds: [queue, limit, worker, leaseMilliseconds])).rows
        }
        var last: ClaimPosition?
        let jobs = try rows.map { row in
            let job = try ClaimedJob(row: row)
            let position = ClaimPosition(priority: try row.decode(ClaimedJob.columnCount, as: Int.self),
                                         runAtMicroseconds: try row.decode(ClaimedJob.columnCount + 1, as: Int64.self),
                                         id: job.id)
            if last.map({ $0 < position }) ?? true { last = position }
            return job
        }
        return ClaimBatch(jobs: jobs, last: last)
    }

    /// The claim statement: $1 queue, $2 limit, $3 worker id, $4 lease in milliseconds.
    /// Public so benchmarks can run exactly this SQL (e.g. under pgbench).
    public static let claimSQL = claimStatement(position: "null, null, null")

    /// The claim started after a position: as ``claimSQL``, and $5 priority, $6 run_at in
    /// microseconds since 1970, $7 id of the position (see ``ClaimPosition``).
    public static let claimAfterSQL = claimStatement(position: "$5::int, $6::bigint, $7::bigint")

    /// The claim is `courier.claim` (`sql/schema/jobs.sql`, where its rules are
    /// written): a loose index scan of `jobs_runnable_idx`, one waiting priority after
    /// another and within each the due jobs in order, so jobs scheduled ahead cost nothing.
    /// Rows are locked as they are read (`FOR UPDATE SKIP LOCKED`); held-back destinations
    /// are passed over row by row. Its statements keep one generic plan per session: sent as
    /// one statement instead, the claim was planned anew on every call (0.74 ms of planning
    /// per 0.87 ms of execution) and followed whatever statistics the last ANALYZE left.
    /// Here the claimed rows get their destination's signing secret, and their position.
    static func claimStatement(position: String) -> String {
        ClaimedJob.claimStatement(claimed: "select * from courier.claim($1, $2::int, $3, $4::int, \(position))",
                                  extraColumns: ", j.priority, (extract(epoch from j.run_at) * 1000000)::bigint")
    }
}

extension ClaimedJob {
    /// How many columns ``columns`` lists (the claim returns its position after them).
    static let columnCount = columns.split(separator: ",").count
}
