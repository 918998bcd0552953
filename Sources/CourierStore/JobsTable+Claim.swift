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
    public static let claimSQL = claimStatement(after: false)

    /// The claim started after a position: as ``claimSQL``, and $5 priority, $6 run_at in
    /// microseconds since 1970, $7 id of the position (see ``ClaimPosition``).
    public static let claimAfterSQL = claimStatement(after: true)

    /// Builds the claim. It walks `jobs_runnable_idx (queue, priority, run_at, id)` as a loose
    /// index scan: the waiting priorities one probe each (`prio`, evaluated only as far as
    /// the claim reads), and within each priority the range `run_at <= now()` in order,
    /// which ends at the first job not yet due. So jobs scheduled ahead cost the claim
    /// nothing, whatever their number (PostgreSQL 15 has no skip scan to do this for it).
    /// Rows are locked lazily (`FOR UPDATE SKIP LOCKED` inside each range), only as many as
    /// are taken. Started after a position, the claim first reads the rest of the
    /// position's priority from just after it, then the priorities above it.
    /// The queue's pause is checked once per statement. Held-back destinations (breaker not
    /// closed, Retry-After) are filtered inside the ranges, row by row, by a scalar subquery:
    /// written as `not exists`, the planner made it an anti-join, expected few rows, sorted a
    /// sequential scan of the whole queue and JIT-compiled the statement (seconds, on a
    /// 200k-job queue). Filtered outside the ranges instead, a destination whose breaker had
    /// just opened over more waiting jobs than a claim's limit would fill every claim's window
    /// until the keeper had held them all (minutes for a 1M backlog), and no destination
    /// behind it would be claimed. So such jobs are passed over (neither taken nor locked)
    /// until the keeper moves them out of the index, which it does in bounded passes.
    static func claimStatement(after: Bool) -> String {
        let waiting = "c.queue = $1 and c.state = 'available' and c.held_since is null and not c.gated"
        // Per row, as a subplan the planner cannot turn into an anti-join (see above).
        let released = """
            (select \(BreakersTable.holdsBack) from courier.breakers b
                         where b.destination = c.destination) is not true
            """
        // One priority's due jobs in the claim's order, locked as they are read.
        func range(priority: String, from bound: String = "") -> String {
            """
                    select c.id, c.destination from courier.jobs c
                    where \(waiting) and c.priority = \(priority)\(bound)
                      and c.run_at <= now()
                      and \(released)
                    order by c.priority, c.run_at, c.id
                    limit $2
                    for update skip locked
            """
        }
        let position = " and (c.run_at, c.id) > (timestamptz 'epoch' + $6::bigint * interval '1 microsecond', $7::bigint)"
        let rest = after ? """
                select s.id, s.destination from (
            \(range(priority: "$5", from: position))
                ) s
                union all

            """ : ""
        let floor = after ? "c.priority > $5::int" : "true"
        return """
            with recursive prio(p) as (
                (select c.priority from courier.jobs c where \(waiting) and \(floor) order by c.priority limit 1)
                union all
                select (select c.priority from courier.jobs c where \(waiting) and c.priority > prio.p order by c.priority limit 1)
                from prio where prio.p is not null
            ),
            candidates as (
            \(rest)    select t.id, t.destination from prio cross join lateral (
            \(range(priority: "prio.p"))
                ) t
                where prio.p is not null
                -- Not needed for the result (picked has the same limit), but it keeps the planner
                -- estimate small: this CTE is materialized (it locks rows), and without a
                -- limit it is costed as a full range for each of the 100 priorities the planner
                -- assumes, above jit_above_cost on a 200k-job queue (a 60 ms compilation per
                -- claim in a session with JIT on, such as one through a pooler).
                limit $2
            ),
            picked as (
                select candidates.id, candidates.destination from candidates
                where not exists (select 1 from courier.queue_settings q where q.queue = $1 and q.paused)
                limit $2
            )
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, leased_by = $3,
                lease_expires_at = now() + $4 * interval '1 millisecond', attempted_at = now()
            from \(ClaimedJob.destinationPolicyJoin) where j.id = picked.id and sd.gated is not true
            returning \(ClaimedJob.columns), j.priority, (extract(epoch from j.run_at) * 1000000)::bigint
            """
    }
}

extension ClaimedJob {
    /// How many columns ``columns`` lists (the claim returns its position after them).
    static let columnCount = columns.split(separator: ",").count
}
