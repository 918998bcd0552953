import CourierCore
import Foundation
import Postgres

/// Statements about `courier.dead_letters`: listing, replaying and purging.
public enum DeadLettersTable {
    /// Which dead letters an operator means. Every list is "any of"; nil means any.
    public struct Filter: Sendable, Equatable {
        public var ids: [Int64]?
        public var reasons: [String]?
        public var destinations: [String]?
        public var queues: [String]?
        public var classes: [String]?
        public var statuses: [Int]?
        public var since: Date?
        public var until: Date?
        public var limit: Int?
        /// Include dead letters already replayed (`--force` for replay).
        public var includeReplayed = true

        public init(ids: [Int64]? = nil, reasons: [String]? = nil, destinations: [String]? = nil, queues: [String]? = nil,
                    classes: [String]? = nil, statuses: [Int]? = nil, since: Date? = nil, until: Date? = nil,
                    limit: Int? = nil, includeReplayed: Bool = true) {
            self.ids = ids
            self.reasons = reasons
            self.destinations = destinations
            self.queues = queues
            self.classes = classes
            self.statuses = statuses
            self.since = since
            self.until = until
            self.limit = limit
            self.includeReplayed = includeReplayed
        }
    }

    /// A dead letter as `jobctl dead list/show` shows it; sensitive headers redacted.
    public struct Letter: Sendable, Equatable, Encodable {
        public var id: Int64
        public var jobID: Int64
        public var reason: String
        public var queue: String
        public var destination: String
        public var method: String
        public var url: String?
        public var headers: [String: String]
        public var body: String?
        public var idempotencyKey: String?
        public var attempt: Int
        public var maxAttempts: Int
        public var deadline: Date?
        public var lastClass: String?
        public var lastStatus: Int?
        public var worker: String?
        public var errors: [AttemptRecord]
        public var createdAt: Date
        public var failedAt: Date
        public var replayedAt: Date?
        public var replayJobID: Int64?
        /// The NAME of the secret that signed the job (never its value), and whether it is the
        /// job's own or its destination's default (as it is now: a replay would use it).
        public var signingSecret: String? = nil
        public var signingSecretFrom: SigningSecretChoice.Source? = nil
        /// The W3C trace context the job was enqueued with; a replay carries it on.
        public var traceparent: String? = nil
        public var tracestate: String? = nil

        enum CodingKeys: String, CodingKey {
            case id, jobID = "job_id", reason, queue, destination, method, url, headers, body
            case idempotencyKey = "idempotency_key", attempt, maxAttempts = "max_attempts", deadline
            case lastClass = "last_class", lastStatus = "last_status", worker, errors, createdAt = "created_at"
            case failedAt = "failed_at", replayedAt = "replayed_at", replayJobID = "replay_job_id"
            case signingSecret = "signing_secret", signingSecretFrom = "signing_secret_from"
            case traceparent, tracestate
        }
    }

    static let columns = """
        id, job_id, reason, queue, destination, method, url, headers::text, body, idempotency_key, attempt, max_attempts,
        deadline, last_class, last_status, worker, errors::text, created_at, failed_at, replayed_at, replay_job_id,
        signing_secret, \(SigningSecretChoice.destinationDefaultSQL(for: "dead_letters.destination")), traceparent, tracestate
        """

    /// How many columns ``columns`` selects (callers may select more after them).
    static let columnCount = 25

    static func decode(_ row: PostgresRow) throws -> Letter {
        var letter = Letter(
            id: try row.decode(0, as: Int64.self), jobID: try row.decode(1, as: Int64.self),
            reason: try row.decode(2, as: String.self), queue: try row.decode(3, as: String.self),
            destination: try row.decode(4, as: String.self), method: try row.decode(5, as: String.self),
            url: try row.decode(6, as: String?.self).map(Redaction.redactURL), headers: JobRecord.displayHeaders(try row.decode(7, as: String.self)),
            body: try row.decode(8, as: String?.self), idempotencyKey: try row.decode(9, as: String?.self),
            attempt: try row.decode(10, as: Int.self), maxAttempts: try row.decode(11, as: Int.self),
            deadline: try row.decode(12, as: Date?.self), lastClass: try row.decode(13, as: String?.self),
            lastStatus: try row.decode(14, as: Int?.self), worker: try row.decode(15, as: String?.self),
            errors: AttemptRecord.decodeHistory(try row.decode(16, as: String.self)),
            createdAt: try row.decode(17, as: Date.self), failedAt: try row.decode(18, as: Date.self),
            replayedAt: try row.decode(19, as: Date?.self), replayJobID: try row.decode(20, as: Int64?.self))
        let choice = SigningSecretChoice.choose(own: try row.decode(21, as: String?.self),
                                                destinationDefault: try row.decode(22, as: String?.self))
        letter.signingSecret = choice?.name
        letter.signingSecretFrom = choice?.source
        letter.traceparent = try row.decode(23, as: String?.self)
        letter.tracestate = try row.decode(24, as: String?.self)
        return letter
    }

    /// The filter's WHERE clause; every value is a bind.
    static func whereClause(_ f: Filter) -> PostgresQuery {
        """
        where (\(f.ids)::bigint[] is null or id = any(\(f.ids)::bigint[]))
          and (\(f.reasons)::text[] is null or reason = any(\(f.reasons)::text[]))
          and (\(f.destinations)::text[] is null or destination = any(\(f.destinations)::text[]))
          and (\(f.queues)::text[] is null or queue = any(\(f.queues)::text[]))
          and (\(f.classes)::text[] is null or last_class = any(\(f.classes)::text[]))
          and (\(f.statuses)::int[] is null or last_status = any(\(f.statuses)::int[]))
          and (\(f.since)::timestamptz is null or failed_at >= \(f.since)::timestamptz)
          and (\(f.until)::timestamptz is null or failed_at < \(f.until)::timestamptz)
          and (\(f.includeReplayed) or replayed_at is null)
        """
    }

    /// Dead letters matching `filter`, newest first.
    public static func list(_ filter: Filter, on connection: PostgresConnection) throws -> [Letter] {
        var query = PostgresQuery(unsafeSQL: "select \(columns) from courier.dead_letters ")
        query.append(whereClause(filter))
        query.append(" order by failed_at desc, id desc limit \(filter.limit ?? 100)")
        return try connection.query(query).rows.map(decode)
    }

    public static func get(id: Int64, on connection: PostgresConnection) throws -> Letter? {
        var query = PostgresQuery(unsafeSQL: "select \(columns) from courier.dead_letters ")
        query.append("where id = \(id)")
        return try connection.query(query).rows.first.map(decode)
    }

    /// One replayed (or, in a dry run, selected) dead letter.
    public struct Replayed: Sendable, Equatable {
        public var deadLetterID: Int64
        public var newJobID: Int64?
        public var destination: String
        public var runAt: Date
    }

    /// Replays up to `chunk` dead letters through `courier.replay_dead_letters`, the
    /// n-th of the whole replay (`startIndex + i`) running at `startAt + n / rate`.
    /// Call repeatedly with a growing `startIndex` to replay in chunks with progress;
    /// each chunk is its own short transaction.
    /// - Parameter replayedBefore: with `filter.includeReplayed` (`--force`), only rows
    ///   replayed before this time (the database's time when the whole replay began) are
    ///   replayed again, so later chunks skip the rows earlier chunks replayed.
    public static func replayChunk(_ filter: Filter, ratePerSecond: Double?, startAt: Date, startIndex: Int, chunk: Int,
                                   dryRun: Bool, replayedBefore: Date? = nil,
                                   on connection: PostgresConnection) throws -> [Replayed] {
        let rows = try connection.query("""
            select dead_letter_id, new_job_id, destination, run_at from courier.replay_dead_letters(
                ids => \(filter.ids)::bigint[], reasons => \(filter.reasons)::text[],
                destinations => \(filter.destinations)::text[], queues => \(filter.queues)::text[],
                classes => \(filter.classes)::text[], statuses => \(filter.statuses)::int[],
                since => \(filter.since)::timestamptz, until => \(filter.until)::timestamptz,
                rate_per_second => \(ratePerSecond)::float8, start_at => \(startAt)::timestamptz,
                start_index => \(startIndex)::bigint, max_rows => \(chunk)::int, force => \(filter.includeReplayed),
                dry_run => \(dryRun), replayed_before => \(replayedBefore)::timestamptz)
            """).rows
        return try rows.map { row in
            Replayed(deadLetterID: try row.decode(0, as: Int64.self), newJobID: try row.decode(1, as: Int64?.self),
                     destination: try row.decode(2, as: String.self), runAt: try row.decode(3, as: Date.self))
        }
    }

    /// The database's current time, which replays use as their start (never a client's clock).
    public static func databaseNow(on connection: PostgresConnection) throws -> Date {
        try connection.query("select now()").rows[0].decode(0, as: Date.self)
    }

    /// How many dead letters `filter` selects, per destination (for dry runs and progress).
    public static func countByDestination(_ filter: Filter, on connection: PostgresConnection) throws -> [(destination: String, count: Int)] {
        var query = PostgresQuery(unsafeSQL: "select destination, count(*)::bigint from (select destination from courier.dead_letters ")
        query.append(whereClause(filter))
        query.append(" order by failed_at, id limit \(filter.limit ?? Int(Int32.max))) s group by destination order by 2 desc, 1")
        return try connection.query(query).rows.map { (try $0.decode(0, as: String.self), try $0.decode(1, as: Int.self)) }
    }

    /// Deletes dead letters by id. Returns how many were deleted.
    public static func purge(ids: [Int64], on connection: PostgresConnection) throws -> Int {
        try connection.execute("delete from courier.dead_letters where id = any(\(ids))")
    }

    /// Deletes dead letters that failed longer ago than `milliseconds`, in batches of
    /// `batch` (oldest first, each its own statement; rows a concurrent purge holds are
    /// skipped), until none is left or `maxBatches` were deleted. Returns how many.
    public static func purge(olderThanMilliseconds milliseconds: Int64, batch: Int = 10_000, maxBatches: Int = .max,
                             on connection: PostgresConnection) throws -> Int {
        var total = 0
        for _ in 0..<max(1, maxBatches) {
            let deleted = try purgeBatch(olderThanMilliseconds: milliseconds, batch: batch, on: connection)
            total += deleted
            if deleted < batch { break }
        }
        return total
    }

    /// One batch of ``purge(olderThanMilliseconds:batch:maxBatches:on:)``.
    public static func purgeBatch(olderThanMilliseconds milliseconds: Int64, batch: Int,
                                  on connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            with doomed as (
                select id from courier.dead_letters
                where failed_at < now() - \(milliseconds) * interval '1 millisecond'
                order by failed_at
                limit \(batch)
                for update skip locked
            )
            delete from courier.dead_letters d using doomed where d.id = doomed.id
            """)
    }

    /// "courier-replay" as an advisory lock key: held by a forced replay for its whole run.
    static let forcedReplayLockKey: Int64 = 0x636f_7572_7265_706c

    /// Takes the forced-replay lock for this session, if no other session holds it. A
    /// forced replay (`--force`) replays dead letters replayed before it began; two at once
    /// would each replay the same ones, so only one may run at a time. Needs a session of
    /// its own (a direct connection or a session-mode pool): the lock lives as long as it.
    public static func tryLockForcedReplay(on connection: PostgresConnection) throws -> Bool {
        try connection.query("select pg_try_advisory_lock(\(forcedReplayLockKey))").rows[0].decode(0, as: Bool.self)
    }

    /// Releases the lock ``tryLockForcedReplay(on:)`` took.
    public static func unlockForcedReplay(on connection: PostgresConnection) throws {
        _ = try connection.query("select pg_advisory_unlock(\(forcedReplayLockKey))")
    }
}
