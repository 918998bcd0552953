import CourierCore
import Foundation
import Postgres

/// Everything `jobctl` asks of the database, as noun-verb operations on typed values,
/// on one connection the command owns for its run. Each operation is one of the table
/// files' statements (JobsTable, DeadLettersTable, SchedulesTable, ...); the names follow
/// the nouns of the commands. Errors thrown are the driver's and are classified by
/// ``StoreError/from(_:)`` where jobctl maps them to exit codes; ``connect(_:)`` throws
/// a ``StoreError`` itself.
public final class ControlStore {
    private let connection: PostgresConnection

    private init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Why `connectionString` cannot be a libpq connection string, or nil when it can.
    public static func connectionStringProblem(_ connectionString: String) -> String? {
        PostgresConnectionString.problem(connectionString)
    }

    /// Opens a connection. A failure is a `StoreError` (`.connectionLost`) whose message
    /// is libpq's own ("connection to server ... failed: ...").
    public static func connect(_ configuration: DatabaseConfiguration) throws -> ControlStore {
        do {
            return ControlStore(connection: try PostgresConnection.connect(configuration))
        } catch let error as PostgresError {
            throw StoreError(code: .connectionLost, message: error.message)
        }
    }

    public func close() { connection.close() }

    /// Creates database `name` on the server `adminConfiguration` reaches, unless it exists
    /// (for `jobctl devdb start`). `name` is an identifier Courier chooses, never user input.
    public static func databaseCreateIfMissing(_ name: String, adminConfiguration: DatabaseConfiguration) throws {
        precondition(name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "a plain identifier")
        let admin = try PostgresConnection.connect(adminConfiguration)
        defer { admin.close() }
        if try admin.query("select 1 from pg_database where datname = \(name)").rows.isEmpty {
            try admin.simpleQuery("create database \(name)")
        }
    }

    /// Sets `role`'s password on the server `adminConfiguration` reaches (for `jobctl devdb
    /// start`, whose TCP listener asks for it). ALTER ROLE takes no parameters, so the
    /// password is bound to a session setting and quoted by `format(%L)` in the server; it
    /// is never part of SQL text. `role` is an identifier Courier chooses, never user input.
    public static func rolePasswordSet(_ role: String, password: String, adminConfiguration: DatabaseConfiguration) throws {
        precondition(role.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "a plain identifier")
        let admin = try PostgresConnection.connect(adminConfiguration)
        defer { admin.close() }
        _ = try admin.query("select set_config('courier.devdb_password', \(password), false)")
        try admin.simpleQuery("""
            do $$ begin execute format('alter role \(role) password %L', current_setting('courier.devdb_password')); end $$;
            reset courier.devdb_password
            """)
    }

    /// Runs `body` in one transaction (a savepoint when already in one): everything it does
    /// commits together, or a throw rolls all of it back.
    public func transaction<T>(_ body: (ControlStore) throws -> T) throws -> T {
        try connection.withTransaction { tx in try body(ControlStore(connection: tx)) }
    }

    /// The database's clock.
    public func databaseNow() throws -> Date { try DeadLettersTable.databaseNow(on: connection) }

    // MARK: - Migrations

    public func migrationsApplied() throws -> [Int] { try Migrator.appliedVersions(connection) }
    /// Applies the pending migrations; returns those it applied.
    public func migrationsApply() throws -> [Migration] { try Migrator.migrate(connection) }

    // MARK: - Jobs

    public func jobEnqueue(_ request: EnqueueRequest) throws -> Int64 { try JobsTable.enqueue(request, on: connection) }

    public func jobsEnqueueMany(_ requests: [EnqueueRequest], progress: ((Int) -> Void)? = nil) throws -> JobsTable.BulkResult {
        try JobsTable.enqueueMany(requests, on: connection, progress: progress)
    }

    public func jobGet(id: Int64) throws -> JobRecord? { try JobsTable.get(id: id, on: connection) }
    public func jobsSearch(_ search: JobsTable.Search) throws -> [JobRecord] { try JobsTable.search(search, on: connection) }

    public func jobsCount(_ search: JobsTable.Search, cap: Int = JobsTable.listCountCap) throws -> CappedCount {
        try JobsTable.count(search, cap: cap, on: connection)
    }

    /// Which of `candidates` a job, dead letter or breaker uses as its destination.
    public func destinationsInUse(_ candidates: [String]) throws -> [String] {
        try JobsTable.destinationsInUse(candidates, on: connection)
    }

    public func jobsRetryNow(ids: [Int64]) throws -> [(id: Int64, outcome: JobsTable.SteerOutcome)] {
        try JobsTable.retryNow(ids: ids, on: connection)
    }

    public func jobUpdate(id: Int64, runAt: Date?, priority: Int?) throws -> JobsTable.SteerOutcome {
        try JobsTable.update(id: id, runAt: runAt, priority: priority, on: connection)
    }

    public func jobsCancel(ids: [Int64]) throws -> [(id: Int64, outcome: JobsTable.CancelOutcome)] {
        try JobsTable.cancel(ids: ids, on: connection)
    }

    // MARK: - Dead letters

    public func deadLettersList(_ filter: DeadLettersTable.Filter) throws -> [DeadLettersTable.Letter] {
        try DeadLettersTable.list(filter, on: connection)
    }

    public func deadLettersCount(_ filter: DeadLettersTable.Filter) throws -> CappedCount {
        try DeadLettersTable.count(filter, on: connection)
    }

    public func deadLetterGet(id: Int64) throws -> DeadLettersTable.Letter? { try DeadLettersTable.get(id: id, on: connection) }
    /// The newest dead letter of job `jobID`.
    public func deadLetterGet(jobID: Int64) throws -> DeadLettersTable.Letter? { try DeadLettersTable.get(jobID: jobID, on: connection) }

    public func deadLettersCountByDestination(_ filter: DeadLettersTable.Filter) throws -> [(destination: String, count: Int)] {
        try DeadLettersTable.countByDestination(filter, on: connection)
    }

    /// Takes the session lock that lets one forced replay run at a time; false when another holds it.
    public func deadLettersTryLockForcedReplay() throws -> Bool { try DeadLettersTable.tryLockForcedReplay(on: connection) }
    public func deadLettersUnlockForcedReplay() throws { try DeadLettersTable.unlockForcedReplay(on: connection) }

    public func deadLettersReplayChunk(_ filter: DeadLettersTable.Filter, ratePerSecond: Double?, startAt: Date, startIndex: Int,
                                       chunk: Int, dryRun: Bool, replayedBefore: Date? = nil) throws -> [DeadLettersTable.Replayed] {
        try DeadLettersTable.replayChunk(filter, ratePerSecond: ratePerSecond, startAt: startAt, startIndex: startIndex,
                                         chunk: chunk, dryRun: dryRun, replayedBefore: replayedBefore, on: connection)
    }

    public func deadLettersPurge(ids: [Int64]) throws -> Int { try DeadLettersTable.purge(ids: ids, on: connection) }

    public func deadLettersPurge(olderThanMilliseconds: Int64) throws -> Int {
        try DeadLettersTable.purge(olderThanMilliseconds: olderThanMilliseconds, on: connection)
    }

    // MARK: - Breakers

    public func breakersList() throws -> [BreakersTable.View] { try BreakersTable.list(on: connection) }
    public func breakerIsKnown(destination: String) throws -> Bool { try BreakersTable.isKnown(destination: destination, on: connection) }

    /// Forces a breaker; returns the state before. `actor` is recorded with the event.
    public func breakerForce(destination: String, action: BreakersTable.ForceAction, actor: String) throws -> String {
        try BreakersTable.force(destination: destination, action: action, actor: actor, on: connection)
    }

    // MARK: - Destinations

    public func destinationsOverview() throws -> [DestinationsTable.Overview] { try DestinationsTable.overview(on: connection) }

    public func destinationMerge(_ changes: DestinationsTable.Policy, clear: [DestinationsTable.Field] = [],
                                 propagateTrace: Bool? = nil) throws -> DestinationsTable.Policy {
        try DestinationsTable.merge(changes, clear: clear, propagateTrace: propagateTrace, on: connection)
    }

    public func destinationRemove(destination: String) throws -> Bool { try DestinationsTable.remove(destination: destination, on: connection) }

    public func destinationPause(destination: String, paused: Bool) throws -> DestinationsTable.Policy {
        try DestinationsTable.setPaused(destination: destination, paused, on: connection)
    }

    public func destinationsPaused() throws -> [String] { try DestinationsTable.paused(on: connection) }

    // MARK: - Tenants (fairness keys)

    public func tenantSet(_ key: String, weight: Int?, maxInFlight: Int?, clear: [TenantsTable.Field] = []) throws -> TenantsTable.Tenant {
        try TenantsTable.set(key, weight: weight, maxInFlight: maxInFlight, clear: clear, on: connection)
    }

    public func tenantReset(_ key: String) throws -> Bool { try TenantsTable.reset(key, on: connection) }

    public func tenantsOverview() throws -> [TenantsTable.Overview] { try TenantsTable.overview(on: connection) }

    // MARK: - Queues

    public func queueSettingsAll() throws -> [QueueSettingsTable.Settings] { try QueueSettingsTable.all(on: connection) }

    /// Merges `changes` into the queue's settings; when `check` throws, nothing is changed.
    public func queueSettingsMerge(_ changes: QueueSettingsTable.Settings, clearHeadStart: Bool = false,
                                   check: (QueueSettingsTable.Settings) throws -> Void = { _ in }) throws -> QueueSettingsTable.Settings {
        try connection.withTransaction { tx in
            let merged = try QueueSettingsTable.merge(changes, clearHeadStart: clearHeadStart, on: tx)
            try check(merged)
            return merged
        }
    }

    public func queueSettingsRemove(queue: String) throws -> Bool { try QueueSettingsTable.remove(queue: queue, on: connection) }
    /// Pauses or resumes a queue for the whole fleet; returns whether it was paused.
    public func queuePause(queue: String, paused: Bool) throws -> Bool { try QueueSettingsTable.setPaused(queue: queue, paused, on: connection) }
    public func queuesPaused() throws -> [String] { try QueueSettingsTable.paused(on: connection) }

    // MARK: - Schedules

    public func schedulesAll() throws -> [SchedulesTable.Schedule] { try SchedulesTable.all(on: connection) }
    public func scheduleFind(_ name: String) throws -> SchedulesTable.Schedule? { try SchedulesTable.find(name, on: connection) }
    public func scheduleAdd(_ schedule: SchedulesTable.Schedule) throws { try SchedulesTable.add(schedule, on: connection) }

    public func scheduleUpdate(_ name: String, template: String? = nil, cron: String? = nil, everySeconds: Int64? = nil,
                               timezone: String? = nil, missed: MissedRunPolicy? = nil) throws -> Bool {
        try SchedulesTable.update(name, template: template, cron: cron, everySeconds: everySeconds, timezone: timezone,
                                  missed: missed, on: connection)
    }

    public func schedulePause(_ name: String, paused: Bool) throws -> Bool { try SchedulesTable.setPaused(name, paused, on: connection) }
    public func scheduleRemove(_ name: String) throws -> Bool { try SchedulesTable.remove(name, on: connection) }
    public func scheduleRuns(of name: String, limit: Int) throws -> [SchedulesTable.Run] { try SchedulesTable.runs(of: name, limit: limit, on: connection) }
    public func schedulesCounts() throws -> SchedulesTable.Counts { try SchedulesTable.counts(on: connection) }

    /// Waits for the lock that lets one `schedule apply` run at a time; held until the transaction ends.
    public func schedulesLockApply() throws { try SchedulesTable.lockApply(on: connection) }

    // MARK: - Workers and statistics

    public func workersLive() throws -> [WorkersTable.LiveWorker] { try WorkersTable.live(on: connection) }
    public func statsQueueDepths() throws -> [StatsQueries.QueueDepth] { try StatsQueries.queueDepths(on: connection) }
    public func statsSucceededLastMinute() throws -> Int { try StatsQueries.succeededLastMinute(on: connection) }

    public func attemptStatsSummaries(lastSeconds: Int, by grouping: AttemptStatsTable.Grouping) throws -> [AttemptStatsTable.Summary] {
        try AttemptStatsTable.summaries(lastSeconds: lastSeconds, by: grouping, on: connection)
    }

    public func statsDeadLetterCounts() throws -> [String: Int] { try StatsQueries.deadLetterCounts(on: connection) }
    public func statsBreakerStates() throws -> [String: Int] { try StatsQueries.breakerStates(on: connection) }
}
