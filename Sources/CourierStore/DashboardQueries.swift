import CourierCore
import Foundation
import Postgres

/// The reads the web dashboard needs beyond those `jobctl` already has, each bounded
/// at any table size: counts stop at a cap (and say so), estimates come from
/// `pg_class`, lists are keyset pages, and scans for a filter stop after a window of
/// rows. Every value is a bound parameter.
public enum DashboardQueries {
    /// Counts in lists and on the overview stop here ("more than 10,000").
    public static let countCap = CappedCount.defaultCap
    /// How many rows one filtered page of jobs examines at most before it says "search further".
    public static let scanWindow = 50_000

    /// One queue's waiting and running jobs.
    public struct QueueLoad: Sendable, Equatable, Encodable {
        public var queue: String
        public var available: CappedCount
        public var running: Int
    }

    /// Every queue that has runnable jobs, running jobs or settings (at most `limit`), with
    /// capped counts. Queue names come from a skip scan of the runnable index, so 10M jobs
    /// in three queues cost three index probes, not a table scan.
    public static func queueLoads(limit: Int = 50, on connection: PostgresConnection) throws -> [QueueLoad] {
        let cap = countCap
        return try connection.query("""
            with recursive runnable(queue) as (
                (select queue from courier.jobs where state = 'available' and held_since is null order by queue limit 1)
                union all
                select (select j.queue from courier.jobs j
                        where j.state = 'available' and j.held_since is null and j.queue > r.queue
                        order by j.queue limit 1)
                from runnable r where r.queue is not null
            ), names as (
                select queue from runnable where queue is not null
                union select queue from courier.queue_settings
                -- Running jobs are few (the fleet's slots): read through the lease index.
                union select queue from courier.jobs where state = 'running' and lease_expires_at is not null
            )
            select n.queue,
                   (select count(*) from (select 1 from courier.jobs j where j.queue = n.queue and j.state = 'available'
                                          and j.held_since is null limit \(cap + 1)) c)::bigint,
                   (select count(*) from courier.jobs j where j.queue = n.queue and j.state = 'running'
                                                         and j.lease_expires_at is not null)::bigint
            from names n order by n.queue limit \(limit)
            """).rows.map { row in
            QueueLoad(queue: try row.decode(0, as: String.self),
                      available: CappedCount(counted: try row.decode(1, as: Int.self), cap: cap),
                      running: try row.decode(2, as: Int.self))
        }
    }

    /// Jobs held back by an open breaker (capped).
    public static func heldJobs(on connection: PostgresConnection) throws -> CappedCount {
        let cap = countCap
        return CappedCount(counted: try connection.query("""
            select count(*)::bigint from (select 1 from courier.jobs where held_since is not null limit \(cap + 1)) c
            """).rows[0].decode(0, as: Int.self), cap: cap)
    }

    /// The planner's row estimates for the big tables (`pg_class.reltuples`; -1 before the first ANALYZE).
    public static func estimatedRows(on connection: PostgresConnection) throws -> [String: Int] {
        var estimates: [String: Int] = [:]
        for row in try connection.query("""
            select c.relname, greatest(c.reltuples, 0)::bigint from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = 'courier' and c.relname in ('dead_letters', 'completed_jobs')
            union all
            -- courier.jobs is partitioned (sql/0048): the estimate is its partitions'.
            select 'jobs', coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint
            from pg_partition_tree('courier.jobs') t join pg_class c on c.oid = t.relid where t.isleaf
            """).rows {
            estimates[try row.decode(0, as: String.self)] = try row.decode(1, as: Int.self)
        }
        return estimates
    }

    /// Dead letters waiting for a decision per reason, each count capped (read from the
    /// waiting-by-reason index only as far as the cap).
    public static func waitingDeadLetters(reasons: [String], on connection: PostgresConnection) throws -> [String: CappedCount] {
        let cap = countCap
        var counts: [String: CappedCount] = [:]
        for row in try connection.query("""
            select r, (select count(*) from (select 1 from courier.dead_letters d
                                             where d.reason = r and d.replayed_at is null limit \(cap + 1)) c)::bigint
            from unnest(\(reasons)::text[]) r
            """).rows {
            counts[try row.decode(0, as: String.self)] = CappedCount(counted: try row.decode(1, as: Int.self), cap: cap)
        }
        return counts
    }

    /// Attempts per minute over the last `minutes`, from the workers' per-minute stats.
    public struct MinuteAttempts: Sendable, Equatable, Encodable {
        /// The minute's start.
        public var minute: Date
        public var succeeded: Int
        public var failed: Int
    }

    /// Attempts per minute (succeeded and failed) and by class over the last `minutes`, in
    /// one pass over the workers' per-minute stats.
    public static func attempts(minutes: Int, on connection: PostgresConnection) throws
        -> (perMinute: [MinuteAttempts], byClass: [String: Int]) {
        var perMinute: [Date: MinuteAttempts] = [:]
        var byClass: [String: Int] = [:]
        for row in try connection.query("""
            select bucket, class, sum(attempts)::bigint from courier.attempt_stats
            where bucket >= date_trunc('minute', now()) - \(minutes) * interval '1 minute'
            group by bucket, class
            """).rows {
            let minute = try row.decode(0, as: Date.self)
            let errorClass = try row.decode(1, as: String.self)
            let attempts = try row.decode(2, as: Int.self)
            byClass[errorClass, default: 0] += attempts
            var entry = perMinute[minute] ?? MinuteAttempts(minute: minute, succeeded: 0, failed: 0)
            if errorClass == "success" { entry.succeeded += attempts } else { entry.failed += attempts }
            perMinute[minute] = entry
        }
        return (perMinute.values.sorted { $0.minute < $1.minute }, byClass)
    }

    // MARK: - Jobs

    /// What `/jobs` shows: filters (nil means any), a keyset cursor and a page size.
    public struct JobsPageQuery: Sendable, Equatable {
        /// `available`, `running` or `held`.
        public var state: String?
        public var queue: String?
        public var destination: String?
        /// Text the URL contains, or an exact idempotency or unique key.
        public var text: String?
        /// Only jobs with an id below this (the previous page's last id).
        public var before: Int64?
        public var limit: Int

        public init(state: String? = nil, queue: String? = nil, destination: String? = nil, text: String? = nil,
                    before: Int64? = nil, limit: Int = 50) {
            self.state = state
            self.queue = queue
            self.destination = destination
            self.text = text
            self.before = before
            self.limit = limit
        }
    }

    /// One page of jobs, newest first.
    public struct JobsPage: Sendable, Equatable {
        public var jobs: [JobRecord]
        /// The cursor of the next page (an id), nil when there is none.
        public var next: Int64?
        /// True when the page stopped because it examined ``scanWindow`` rows, not because it
        /// filled: more matches may follow from `next`.
        public var windowExhausted: Bool
    }

    /// Waiting and running jobs matching the query, newest first, examining at most
    /// ``scanWindow`` rows below the cursor (the primary key's order), so a filter that
    /// matches nothing costs a bounded scan, never the whole table.
    public static func jobsPage(_ q: JobsPageQuery, on connection: PostgresConnection) throws -> JobsPage {
        let window = scanWindow
        let state = q.state == "held" ? nil : q.state
        let held = q.state == "held"
        let ids = try connection.query("""
            select w.id from (select id, state, queue, destination, url, idempotency_key, unique_key, held_since
                              from courier.jobs where (\(q.before)::bigint is null or id < \(q.before)::bigint)
                              order by id desc limit \(window)) w
            where (\(state)::text is null or w.state = \(state)::text)
              and (not \(held) or w.held_since is not null)
              and (\(q.queue)::text is null or w.queue = \(q.queue)::text)
              and (\(q.destination)::text is null or w.destination = \(q.destination)::text)
              and (\(q.text)::text is null or strpos(w.url, \(q.text)::text) > 0
                   or w.idempotency_key = \(q.text)::text or w.unique_key = \(q.text)::text)
            order by w.id desc limit \(q.limit + 1)
            """).rows.map { try $0.decode(0, as: Int64.self) }
        let pageIDs = Array(ids.prefix(q.limit))
        var jobs: [JobRecord] = []
        if !pageIDs.isEmpty {
            jobs = try connection.query(PostgresQuery(unsafeSQL: """
                select \(JobsTable.waitingColumns) from courier.jobs where id = any($1) order by id desc
                """, binds: [pageIDs])).rows.map(JobsTable.decodeWaiting)
        }
        if ids.count > q.limit { return JobsPage(jobs: jobs, next: pageIDs.last, windowExhausted: false) }
        // Fewer than a page: either the window ran out (more may follow) or the table did.
        let edge = try connection.query("""
            select count(*)::bigint, min(id) from (select id from courier.jobs
                where (\(q.before)::bigint is null or id < \(q.before)::bigint) order by id desc limit \(window)) w
            """).rows[0]
        let examined = try edge.decode(0, as: Int.self)
        if examined >= window, let lowest = try edge.decode(1, as: Int64?.self) {
            return JobsPage(jobs: jobs, next: lowest, windowExhausted: true)
        }
        return JobsPage(jobs: jobs, next: nil, windowExhausted: false)
    }

    // MARK: - Dead letters

    /// What `/dead` shows: dead letters waiting for a decision (not replayed), newest first.
    public struct DeadPageQuery: Sendable, Equatable {
        public var reason: String?
        public var destination: String?
        public var since: Date?
        public var until: Date?
        /// The previous page's last row: only rows older than it (failed_at in microseconds since 1970, id).
        public var before: (failedAtMicros: Int64, id: Int64)?
        public var limit: Int

        public init(reason: String? = nil, destination: String? = nil, since: Date? = nil, until: Date? = nil,
                    before: (failedAtMicros: Int64, id: Int64)? = nil, limit: Int = 50) {
            self.reason = reason
            self.destination = destination
            self.since = since
            self.until = until
            self.before = before
            self.limit = limit
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.reason == b.reason && a.destination == b.destination && a.since == b.since && a.until == b.until
                && a.before?.failedAtMicros == b.before?.failedAtMicros && a.before?.id == b.before?.id && a.limit == b.limit
        }

        /// The same selection as a replay or purge filter (waiting dead letters only).
        public var filter: DeadLettersTable.Filter {
            DeadLettersTable.Filter(reasons: reason.map { [$0] }, destinations: destination.map { [$0] },
                                    since: since, until: until, includeReplayed: false)
        }
    }

    public struct DeadPage: Sendable, Equatable {
        public var letters: [DeadLettersTable.Letter]
        /// The last row's (failed_at, id) when another page follows.
        public var next: (failedAtMicros: Int64, id: Int64)?

        public static func == (a: Self, b: Self) -> Bool {
            a.letters == b.letters && a.next?.failedAtMicros == b.next?.failedAtMicros && a.next?.id == b.next?.id
        }
    }

    /// One keyset page of waiting dead letters (the indexes on reason, destination and
    /// failed_at give the order, so a page reads about a page of rows).
    public static func deadPage(_ q: DeadPageQuery, on connection: PostgresConnection) throws -> DeadPage {
        var query = PostgresQuery(unsafeSQL: """
            select \(DeadLettersTable.columns), (extract(epoch from failed_at) * 1000000)::bigint from courier.dead_letters 
            """)
        query.append("""
            where replayed_at is null
              and (\(q.reason)::text is null or reason = \(q.reason)::text)
              and (\(q.destination)::text is null or destination = \(q.destination)::text)
              and (\(q.since)::timestamptz is null or failed_at >= \(q.since)::timestamptz)
              and (\(q.until)::timestamptz is null or failed_at < \(q.until)::timestamptz)
              and (\(q.before?.failedAtMicros)::bigint is null
                   or (failed_at, id) < (timestamptz 'epoch' + \(q.before?.failedAtMicros)::bigint * interval '1 microsecond',
                                         \(q.before?.id)::bigint))
            order by failed_at desc, id desc limit \(q.limit + 1)
            """)
        let rows = try connection.query(query).rows.map { (try DeadLettersTable.decode($0), try $0.decode(DeadLettersTable.columnCount, as: Int64.self)) }
        let page = rows.prefix(q.limit)
        let next = rows.count > q.limit ? page.last.map { (failedAtMicros: $0.1, id: $0.0.id) } : nil
        let letters = page.map(\.0)
        return DeadPage(letters: letters, next: next)
    }

    // MARK: - Breakers

    /// A breaker for `/breakers`: ``BreakersTable/View`` with its waiting jobs capped (counted
    /// only for breakers not closed: those are the ones holding jobs back, and few).
    public struct Breaker: Sendable, Equatable, Encodable {
        public var destination: String
        public var state: String
        public var since: Date
        public var forced: Bool
        public var consecutiveFailures: Int
        public var nextProbeAt: Date?
        public var openedCount: Int64
        public var waiting: CappedCount?

        enum CodingKeys: String, CodingKey {
            case destination, state, since, forced, consecutiveFailures = "consecutive_failures"
            case nextProbeAt = "next_probe_at", openedCount = "opened_count", waiting
        }
    }

    /// Breakers, those not closed first (at most `limit`), each with a capped count of its
    /// waiting jobs (from the destination index).
    public static func breakers(limit: Int = 500, on connection: PostgresConnection) throws -> [Breaker] {
        let cap = countCap
        return try connection.query("""
            select b.destination, b.state, b.changed_at, b.forced, b.consecutive_failures,
                   case when b.state = 'open' and not b.forced then b.open_until end, b.opened_count,
                   case when b.state <> 'closed' then
                       (select count(*) from (select 1 from courier.jobs j where j.destination = b.destination
                                              and j.state = 'available' limit \(cap + 1)) c) end::bigint
            from courier.breakers b
            order by b.state <> 'closed' desc, b.destination limit \(limit)
            """).rows.map { row in
            Breaker(destination: try row.decode(0, as: String.self), state: try row.decode(1, as: String.self),
                    since: try row.decode(2, as: Date.self), forced: try row.decode(3, as: Bool.self),
                    consecutiveFailures: try row.decode(4, as: Int.self), nextProbeAt: try row.decode(5, as: Date?.self),
                    openedCount: try row.decode(6, as: Int64.self),
                    waiting: try row.decode(7, as: Int?.self).map { CappedCount(counted: $0, cap: cap) })
        }
    }

    /// One breaker transition, as recorded in `courier.breaker_events`.
    public struct BreakerEvent: Sendable, Equatable, Encodable {
        public var destination: String
        public var at: Date
        public var from: String
        public var to: String
        public var reason: String
        public var worker: String?
    }

    /// The latest transitions (of one destination, or of all), newest first.
    public static func breakerEvents(destination: String?, limit: Int = 50, on connection: PostgresConnection) throws -> [BreakerEvent] {
        try connection.query("""
            select destination, at, from_state, to_state, reason, worker from courier.breaker_events
            where \(destination)::text is null or destination = \(destination)::text
            order by id desc limit \(limit)
            """).rows.map { row in
            BreakerEvent(destination: try row.decode(0, as: String.self), at: try row.decode(1, as: Date.self),
                         from: try row.decode(2, as: String.self), to: try row.decode(3, as: String.self),
                         reason: try row.decode(4, as: String.self), worker: try row.decode(5, as: String?.self))
        }
    }
}
