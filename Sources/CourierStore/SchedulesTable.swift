import CourierCore
import Foundation
import Postgres

/// The statements about `courier.schedules` and `courier.schedule_runs` (sql/schema/schedules.sql).
public enum SchedulesTable {
    /// A schedule row.
    public struct Schedule: Sendable, Equatable {
        public var name: String
        public var cron: String?
        public var everySeconds: Int64?
        public var timezone: String = ScheduleRule.defaultTimeZone
        public var missed: MissedRunPolicy = .default
        public var paused = false
        /// The template's JSON object text (see ``ScheduleTemplate``).
        public var template: String
        public var nextRun: Date?
        public var lastError: String?

        public init(name: String, cron: String? = nil, everySeconds: Int64? = nil, template: String) {
            self.name = name
            self.cron = cron
            self.everySeconds = everySeconds
            self.template = template
        }

        /// The schedule's timing rule; errors name the column.
        public func rule() throws(ValidationError) -> ScheduleRule {
            if let everySeconds {
                guard everySeconds >= 1 else { throw ValidationError(field: "every", message: "must be at least 1s") }
                return .every(seconds: everySeconds)
            }
            let expression = try CronExpression(parsing: cron ?? "", field: "cron")
            return .cron(expression, timeZone: try ScheduleRule.timeZone(named: timezone))
        }
    }

    /// Whether `name` is a valid schedule name (as the table's CHECK says).
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 128 && name.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || "_.:-".utf8.contains(byte)
        }
    }

    static let columns = "name, cron, every_seconds, timezone, missed, paused, template::text, next_run, last_error"

    static func schedule(_ row: PostgresRow) throws -> Schedule {
        var s = Schedule(name: try row.decode(0), cron: try row.decode(1, as: String?.self),
                         everySeconds: try row.decode(2, as: Int64?.self), template: try row.decode(6))
        s.timezone = try row.decode(3)
        s.missed = MissedRunPolicy(rawValue: try row.decode(4)) ?? .default
        s.paused = try row.decode(5)
        s.nextRun = try row.decode(7, as: Date?.self)
        s.lastError = try row.decode(8, as: String?.self)
        return s
    }

    /// Every schedule, by name.
    public static func all(on connection: PostgresConnection) throws -> [Schedule] {
        try connection.query("select name, cron, every_seconds, timezone, missed, paused, template::text, next_run, last_error from courier.schedules order by name")
            .rows.map(schedule)
    }

    /// One schedule, or nil.
    public static func find(_ name: String, on connection: PostgresConnection) throws -> Schedule? {
        try connection.query("""
            select name, cron, every_seconds, timezone, missed, paused, template::text, next_run, last_error
            from courier.schedules where name = \(name)
            """).rows.first.map(schedule)
    }

    /// Adds a schedule through `courier.schedule_add`.
    public static func add(_ s: Schedule, on connection: PostgresConnection) throws {
        try connection.query("""
            select courier.schedule_add(name => \(s.name)::text, template => \(PostgresJSON(s.template)),
                cron => \(s.cron)::text, every => \(s.everySeconds)::bigint * interval '1 second',
                timezone => \(s.timezone)::text, missed => \(s.missed.rawValue)::text, paused => \(s.paused))
            """)
    }

    /// Changes a schedule through `courier.schedule_update`: nil arguments keep what is stored;
    /// a new rule or time zone makes the next run be computed anew. False when there is no such schedule.
    public static func update(_ name: String, template: String? = nil, cron: String? = nil, everySeconds: Int64? = nil,
                              timezone: String? = nil, missed: MissedRunPolicy? = nil,
                              on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            select courier.schedule_update(name => \(name)::text, template => \(template.map { PostgresJSON($0) })::jsonb,
                cron => \(cron)::text, every => \(everySeconds)::bigint * interval '1 second',
                timezone => \(timezone)::text, missed => \(missed?.rawValue)::text)
            """).rows[0].decode(0, as: Bool.self)
    }

    /// Pauses (`true`) or resumes a schedule; false when there is no such schedule.
    public static func setPaused(_ name: String, _ paused: Bool, on connection: PostgresConnection) throws -> Bool {
        let query: PostgresQuery = paused ? "select courier.schedule_pause(\(name)::text)" : "select courier.schedule_resume(\(name)::text)"
        return try connection.query(query).rows[0].decode(0, as: Bool.self)
    }

    /// Removes a schedule and its run history; false when there is no such schedule.
    public static func remove(_ name: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("select courier.schedule_remove(\(name)::text)").rows[0].decode(0, as: Bool.self)
    }

    /// Waits for the transaction-scoped lock that lets one `jobctl schedule apply` run at a
    /// time: two deploys applying different files must not interleave.
    public static func lockApply(on connection: PostgresConnection) throws {
        try connection.query("select pg_advisory_xact_lock(hashtext('courier.schedule_apply'))")
    }

    /// Counts for `jobctl stats`: all schedules, paused ones, and ones that cannot run.
    public struct Counts: Sendable, Equatable {
        public var total: Int
        public var paused: Int
        public var failing: Int
        /// `total`, `paused`, `failing` by name.
        public var dictionary: [String: Int] { ["total": total, "paused": paused, "failing": failing] }
    }

    public static func counts(on connection: PostgresConnection) throws -> Counts {
        let row = try connection.query("""
            select count(*)::bigint, count(*) filter (where paused)::bigint, count(*) filter (where last_error is not null)::bigint
            from courier.schedules
            """).rows[0]
        return Counts(total: Int(try row.decode(0, as: Int64.self)), paused: Int(try row.decode(1, as: Int64.self)),
                      failing: Int(try row.decode(2, as: Int64.self)))
    }

    // MARK: - The scheduler's transaction

    /// Locks one schedule that is due at `now` (or whose next run was never computed),
    /// skipping rows another worker holds. Call inside a transaction. Returns the row and
    /// the time used (`now`, or the database's clock when nil).
    public static func claimDue(now: Date?, on tx: PostgresConnection) throws -> (Schedule, now: Date)? {
        guard let row = try tx.query("""
            select name, cron, every_seconds, timezone, missed, paused, template::text, next_run, last_error,
                   coalesce(\(now)::timestamptz, now())
            from courier.schedules
            where not paused and last_error is null
              and (next_run is null or next_run <= coalesce(\(now)::timestamptz, now()))
            order by next_run nulls first
            limit 1
            for update skip locked
            """).rows.first else { return nil }
        return (try schedule(row), try row.decode(9, as: Date.self))
    }

    /// Records one run (the primary key refuses a slot run twice) inside the scheduler's transaction.
    public static func recordRun(schedule: String, slot: Date, jobID: Int64, on tx: PostgresConnection) throws {
        try tx.query("""
            insert into courier.schedule_runs (schedule, slot, job_id) values (\(schedule), \(slot)::timestamptz, \(jobID))
            """)
    }

    /// The number of runs kept per schedule for `jobctl schedule show`.
    public static let keptRuns = 100

    /// Sets the next run and drops history beyond ``keptRuns``.
    public static func advance(_ name: String, nextRun: Date?, on tx: PostgresConnection) throws {
        try tx.query("update courier.schedules set next_run = \(nextRun)::timestamptz where name = \(name)")
        try tx.query("""
            delete from courier.schedule_runs
            where schedule = \(name)
              and slot < (select slot from courier.schedule_runs where schedule = \(name)
                          order by slot desc offset \(keptRuns - 1) limit 1)
            """)
    }

    /// Marks a schedule as unable to run (it is skipped until updated or resumed).
    public static func fail(_ name: String, error: String, on connection: PostgresConnection) throws {
        try connection.query("update courier.schedules set last_error = \(error), next_run = null where name = \(name)")
    }

    /// The earliest next run of any runnable schedule, and the time used, so the scheduler
    /// can sleep until then.
    public static func earliestNextRun(now: Date?, on connection: PostgresConnection) throws -> (next: Date?, now: Date) {
        let row = try connection.query("""
            select (select min(coalesce(next_run, '-infinity')) from courier.schedules where not paused and last_error is null),
                   coalesce(\(now)::timestamptz, now())
            """).rows[0]
        let next: Date? = row[0] == "-infinity" ? .distantPast : try row.decode(0, as: Date?.self)
        return (next, try row.decode(1, as: Date.self))
    }

    /// A run as `jobctl schedule show` reports it.
    public struct Run: Sendable, Equatable {
        public var slot: Date
        public var jobID: Int64
        public var enqueuedAt: Date
        /// `available`, `running`, `succeeded`, `dead:<reason>`, or `gone` (pruned).
        public var outcome: String
    }

    /// The latest runs of a schedule, newest first, with their jobs' outcomes.
    public static func runs(of name: String, limit: Int, on connection: PostgresConnection) throws -> [Run] {
        try connection.query("""
            select r.slot, r.job_id, r.enqueued_at,
                   coalesce(j.state, case when c.id is not null then 'succeeded' end, 'dead:' || d.reason, 'gone')
            from courier.schedule_runs r
            left join courier.jobs j on j.id = r.job_id
            left join courier.completed_jobs c on c.id = r.job_id
            left join lateral (select reason from courier.dead_letters dl where dl.job_id = r.job_id
                               order by dl.id desc limit 1) d on true
            where r.schedule = \(name)
            order by r.slot desc
            limit \(limit)
            """).rows.map { row in
                Run(slot: try row.decode(0), jobID: try row.decode(1), enqueuedAt: try row.decode(2), outcome: try row.decode(3))
            }
    }
}
