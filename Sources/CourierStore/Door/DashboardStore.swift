import CourierCore
import Foundation
import Postgres

/// Everything the web dashboard asks of the database, as noun-verb operations on typed
/// values, over a small pool of connections (one per handler thread). Reads are
/// ``DashboardQueries`` and the table files' own reads; actions are the same store
/// operations `jobctl` uses (cancel, replay with a rate, purge, breaker force).
/// Every connection has a statement timeout, so no page can hold the database long.
/// Errors thrown are ``StoreError``s.
public final class DashboardStore: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var database: DatabaseConfiguration
        /// Connections kept at most (match the server's handler threads). Default 4.
        public var connections = 4
        /// Each statement's limit. Default 5 s.
        public var statementTimeout: Duration = .seconds(5)

        public init(database: DatabaseConfiguration) {
            self.database = database
        }
    }

    private let configuration: Configuration
    private let idle = Locked<[PostgresConnection]>([])

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Closes the idle connections.
    public func close() {
        idle.withLock { idle in
            idle.forEach { $0.close() }
            idle.removeAll()
        }
    }

    /// Checks that the database answers and the schema is there (for start-up).
    public func check() throws {
        try with { _ = try Migrator.appliedVersions($0) }
    }

    private func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var connection = idle.withLock { $0.popLast() }
        do {
            if connection == nil || connection?.isConnected == false {
                connection?.close()
                let fresh = try PostgresConnection.connect(configuration.database)
                // Custom plans, so the optional filters' `$n is null or ...` fold away and the indexes are used.
                _ = try fresh.query("""
                    select set_config('statement_timeout', \(String(configuration.statementTimeout.milliseconds)), false),
                           set_config('plan_cache_mode', 'force_custom_plan', false)
                    """)
                connection = fresh
            }
            let value = try body(connection!)
            let live = connection!
            idle.withLock { idle in
                if idle.count < configuration.connections { idle.append(live) } else { live.close() }
            }
            return value
        } catch {
            if let connection, connection.isConnected {
                idle.withLock { idle in if idle.count < configuration.connections { idle.append(connection) } else { connection.close() } }
            } else {
                connection?.close()
            }
            throw StoreError.from(error)
        }
    }

    // MARK: - Reads

    /// What the overview shows, read in one short round of bounded queries.
    public struct Overview: Sendable, Equatable, Encodable {
        public var queues: [DashboardQueries.QueueLoad]
        public var held: CappedCount
        public var estimatedRows: [String: Int]
        public var deadLetters: [String: CappedCount]
        public var perMinute: [DashboardQueries.MinuteAttempts]
        public var attemptsByClass: [String: Int]
        public var openBreakers: [OpenBreaker]
        public var liveWorkers: Int
        public var takenAt: Date

        public init(queues: [DashboardQueries.QueueLoad], held: CappedCount, estimatedRows: [String: Int],
                    deadLetters: [String: CappedCount], perMinute: [DashboardQueries.MinuteAttempts],
                    attemptsByClass: [String: Int], openBreakers: [OpenBreaker], liveWorkers: Int, takenAt: Date) {
            self.queues = queues
            self.held = held
            self.estimatedRows = estimatedRows
            self.deadLetters = deadLetters
            self.perMinute = perMinute
            self.attemptsByClass = attemptsByClass
            self.openBreakers = openBreakers
            self.liveWorkers = liveWorkers
            self.takenAt = takenAt
        }

        public struct OpenBreaker: Sendable, Equatable, Encodable {
            public var destination: String
            public var state: String
            public var seconds: Double
        }

        enum CodingKeys: String, CodingKey {
            case queues, held, estimatedRows = "estimated_rows", deadLetters = "dead_letters", perMinute = "per_minute"
            case attemptsByClass = "attempts_by_class", openBreakers = "open_breakers", liveWorkers = "live_workers"
            case takenAt = "taken_at"
        }
    }

    public func overview(minutes: Int = 60) throws -> Overview {
        try with { db in
            let attempts = try DashboardQueries.attempts(minutes: minutes, on: db)
            return Overview(
                queues: try DashboardQueries.queueLoads(on: db),
                held: try DashboardQueries.heldJobs(on: db),
                estimatedRows: try DashboardQueries.estimatedRows(on: db),
                deadLetters: try DashboardQueries.waitingDeadLetters(reasons: DeadLetterReason.allCases.map(\.rawValue), on: db),
                perMinute: attempts.perMinute,
                attemptsByClass: attempts.byClass,
                openBreakers: try StatsQueries.openBreakers(limit: 20, on: db).map {
                    Overview.OpenBreaker(destination: $0.destination, state: $0.state, seconds: $0.seconds)
                },
                liveWorkers: try StatsQueries.liveWorkerCount(on: db),
                takenAt: try DeadLettersTable.databaseNow(on: db))
        }
    }

    public func jobsPage(_ query: DashboardQueries.JobsPageQuery) throws -> DashboardQueries.JobsPage {
        try with { try DashboardQueries.jobsPage(query, on: $0) }
    }

    /// A job wherever it is (waiting, running, succeeded within retention, dead), headers redacted.
    public func job(id: Int64) throws -> JobRecord? {
        try with { try JobsTable.get(id: id, on: $0) }
    }

    public func deadPage(_ query: DashboardQueries.DeadPageQuery) throws -> DashboardQueries.DeadPage {
        try with { try DashboardQueries.deadPage(query, on: $0) }
    }

    public func deadLetter(id: Int64) throws -> DeadLettersTable.Letter? {
        try with { try DeadLettersTable.get(id: id, on: $0) }
    }

    public func breakers() throws -> [DashboardQueries.Breaker] {
        try with { try DashboardQueries.breakers(on: $0) }
    }

    public func breakerEvents(destination: String?, limit: Int = 50) throws -> [DashboardQueries.BreakerEvent] {
        try with { try DashboardQueries.breakerEvents(destination: destination, limit: limit, on: $0) }
    }

    public func workers() throws -> [WorkersTable.LiveWorker] {
        try with { try WorkersTable.live(on: $0) }
    }

    public func schedules() throws -> [SchedulesTable.Schedule] {
        try with { try SchedulesTable.all(on: $0) }
    }

    public func destinations() throws -> [DestinationsTable.Policy] {
        try with { try DestinationsTable.all(on: $0) }
    }

    /// The gated destinations' policies with the jobs each has in flight (fleet-wide).
    public func destinationTraffic() throws -> [DestinationsTable.Traffic] {
        try with { try DestinationsTable.traffic(on: $0) }
    }

    public func queueSettings() throws -> [QueueSettingsTable.Settings] {
        try with { try QueueSettingsTable.all(on: $0) }
    }

    public func queueLoads() throws -> [DashboardQueries.QueueLoad] {
        try with { try DashboardQueries.queueLoads(on: $0) }
    }

    // MARK: - Actions

    /// Pauses or resumes a queue for the whole fleet (as `jobctl queue pause|resume`); returns whether it was paused.
    public func queuePause(queue: String, paused: Bool) throws -> Bool {
        try with { try QueueSettingsTable.setPaused(queue: queue, paused, on: $0) }
    }

    /// Pauses or resumes a destination (as `jobctl destination pause|resume`); returns its stored policy.
    public func destinationPause(destination: String, paused: Bool) throws -> DestinationsTable.Policy {
        try with { try DestinationsTable.setPaused(destination: destination, paused, on: $0) }
    }

    public func jobsCancel(ids: [Int64]) throws -> [(id: Int64, outcome: JobsTable.CancelOutcome)] {
        try with { try JobsTable.cancel(ids: ids, on: $0) }
    }

    /// Makes waiting jobs due now without using an attempt (`jobctl retry`'s operation).
    public func jobsRetryNow(ids: [Int64]) throws -> [(id: Int64, outcome: JobsTable.SteerOutcome)] {
        try with { try JobsTable.retryNow(ids: ids, on: $0) }
    }

    /// How many waiting dead letters `filter` selects per destination (stopping at `cap` rows).
    public func deadReplayPreview(_ filter: DeadLettersTable.Filter, cap: Int) throws -> [(destination: String, count: Int)] {
        var capped = filter
        capped.limit = cap
        return try with { try DeadLettersTable.countByDestination(capped, on: $0) }
    }

    /// The outcome of a replay from the dashboard.
    public struct ReplayResult: Sendable, Equatable, Encodable {
        public var replayed: Int
        public var byDestination: [String: Int]
        public var firstRunAt: Date?
        public var lastRunAt: Date?
        /// True when it stopped at its cap with more rows selected.
        public var more: Bool

        enum CodingKeys: String, CodingKey {
            case replayed, byDestination = "by_destination", firstRunAt = "first_run_at", lastRunAt = "last_run_at", more
        }
    }

    /// Replays up to `cap` waiting dead letters that `filter` selects, paced at `ratePerSecond`,
    /// in short chunks (the replay `jobctl dead replay` runs, through the same statement).
    public func deadReplay(_ filter: DeadLettersTable.Filter, ratePerSecond: Double?, cap: Int, chunk: Int = 5000) throws -> ReplayResult {
        try with { db in
            let startAt = try DeadLettersTable.databaseNow(on: db)
            var result = ReplayResult(replayed: 0, byDestination: [:], firstRunAt: nil, lastRunAt: nil, more: false)
            while result.replayed < cap {
                let size = min(chunk, cap - result.replayed)
                let rows = try DeadLettersTable.replayChunk(filter, ratePerSecond: ratePerSecond, startAt: startAt,
                                                            startIndex: result.replayed, chunk: size, dryRun: false, on: db)
                if rows.isEmpty { break }
                result.replayed += rows.count
                for row in rows { result.byDestination[row.destination, default: 0] += 1 }
                result.firstRunAt = result.firstRunAt ?? rows.first?.runAt
                result.lastRunAt = rows.last?.runAt ?? result.lastRunAt
                if rows.count < size { return result }
            }
            if result.replayed >= cap {
                result.more = try !DeadLettersTable.replayChunk(filter, ratePerSecond: nil, startAt: startAt, startIndex: 0,
                                                                chunk: 1, dryRun: true, on: db).isEmpty
            }
            return result
        }
    }

    public func deadPurge(ids: [Int64]) throws -> Int {
        try with { try DeadLettersTable.purge(ids: ids, on: $0) }
    }

    public func deadPurge(olderThanMilliseconds: Int64) throws -> Int {
        try with { try DeadLettersTable.purge(olderThanMilliseconds: olderThanMilliseconds, on: $0) }
    }

    /// Forces a breaker; returns the state before. `actor` is recorded with the event.
    public func breakerForce(destination: String, action: BreakersTable.ForceAction, actor: String) throws -> String {
        try with { try BreakersTable.force(destination: destination, action: action, actor: actor, on: $0) }
    }

    public func breakerIsKnown(destination: String) throws -> Bool {
        try with { try BreakersTable.isKnown(destination: destination, on: $0) }
    }
}
