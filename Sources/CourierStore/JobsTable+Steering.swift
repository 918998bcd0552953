import CourierCore
import Foundation
import Postgres

/// Finding and steering jobs for operators: `jobctl list` over every place a job can be
/// (waiting or running in `courier.jobs`, succeeded in `courier.completed_jobs`, dead in
/// `courier.dead_letters`), capped counts, and "run now" / reschedule / reprioritise.
extension JobsTable {
    /// Where a job is, as `jobctl list --state` names it.
    public enum ListedState: String, Sendable, CaseIterable {
        case available, running, succeeded, dead
    }

    /// Which jobs an operator means. Every list is "any of"; nil means any.
    public struct Search: Sendable, Equatable {
        public var states: Set<ListedState> = [.available, .running]
        public var queues: [String]?
        public var destinations: [String]?
        public var kinds: [String]?
        /// Only jobs whose URL starts with this text (compared as stored, unredacted).
        public var urlPrefix: String?
        /// Only jobs of these fairness keys (the archive of succeeded jobs keeps no key: none of them match).
        public var fairnessKeys: [String]?
        /// Only jobs enqueued at or after / before these times.
        public var createdSince: Date?
        public var createdUntil: Date?
        /// Keyset pagination: only jobs with a larger id.
        public var afterID: Int64?
        public var limit: Int = 50

        public init(states: Set<ListedState> = [.available, .running], queues: [String]? = nil,
                    destinations: [String]? = nil, kinds: [String]? = nil, urlPrefix: String? = nil,
                    createdSince: Date? = nil, createdUntil: Date? = nil, afterID: Int64? = nil, limit: Int = 50,
                    fairnessKeys: [String]? = nil) {
            self.fairnessKeys = fairnessKeys
            self.states = states
            self.queues = queues
            self.destinations = destinations
            self.kinds = kinds
            self.urlPrefix = urlPrefix
            self.createdSince = createdSince
            self.createdUntil = createdUntil
            self.afterID = afterID
            self.limit = limit
        }

        /// The filter's conditions on a table holding `idColumn`, `queue`, `destination`,
        /// `kind`, `url`, `created_at` and, unless `keepsFairnessKey` is false, `fairness_key`;
        /// every value is a bind.
        func conditions(idColumn: String, keepsFairnessKey: Bool = true) -> PostgresQuery {
            var query = PostgresQuery(unsafeSQL: "(\(idColumn) > ")
            query.append("\(afterID ?? 0)::bigint)")
            query.append(" and (\(queues)::text[] is null or queue = any(\(queues)::text[]))")
            query.append(" and (\(destinations)::text[] is null or destination = any(\(destinations)::text[]))")
            query.append(" and (\(kinds)::text[] is null or kind = any(\(kinds)::text[]))")
            query.append(" and (\(urlPrefix)::text is null or left(url, length(\(urlPrefix)::text)) = \(urlPrefix)::text)")
            query.append(" and (\(createdSince)::timestamptz is null or created_at >= \(createdSince)::timestamptz)")
            query.append(" and (\(createdUntil)::timestamptz is null or created_at < \(createdUntil)::timestamptz)")
            if keepsFairnessKey {
                query.append(" and (\(fairnessKeys)::text[] is null or fairness_key = any(\(fairnessKeys)::text[]))")
            } else if fairnessKeys != nil {
                query.append(" and false")
            }
            return query
        }

        /// The `state` values of `courier.jobs` this search includes, or nil for none.
        var waitingStates: [String]? {
            let states = self.states.filter { $0 == .available || $0 == .running }.map(\.rawValue).sorted()
            return states.isEmpty ? nil : states
        }
    }

    /// Up to `search.limit` jobs matching `search`, by id (oldest first), from every place
    /// the search's states live. Each source is read by its primary key order with the
    /// same limit, so the merge costs at most three short index scans.
    public static func search(_ search: Search, on connection: PostgresConnection) throws -> [JobRecord] {
        var records: [JobRecord] = []
        if let states = search.waitingStates {
            var query = PostgresQuery(unsafeSQL: "select \(waitingColumns) from courier.jobs where state = any(")
            query.append("\(states)::text[]) and ")
            query.append(search.conditions(idColumn: "id"))
            query.append(" order by id limit \(search.limit)")
            records += try connection.query(query).rows.map(decodeWaiting)
        }
        if search.states.contains(.succeeded) {
            var query = PostgresQuery(unsafeSQL: "select \(completedColumns) from courier.completed_jobs where ")
            query.append(search.conditions(idColumn: "id", keepsFairnessKey: false))
            query.append(" order by id limit \(search.limit)")
            records += try connection.query(query).rows.map(decodeCompleted)
        }
        if search.states.contains(.dead) {
            var query = PostgresQuery(unsafeSQL: "select \(deadColumns) from courier.dead_letters where ")
            query.append(search.conditions(idColumn: "job_id"))
            query.append(" order by job_id limit \(search.limit)")
            records += try connection.query(query).rows.map(decodeDead)
        }
        return Array(records.sorted { $0.id < $1.id }.prefix(search.limit))
    }

    /// The default cap of list counts.
    public static let listCountCap = CappedCount.defaultCap

    /// How many jobs match `search`, ignoring its limit, counted up to `cap`.
    public static func count(_ search: Search, cap: Int = listCountCap, on connection: PostgresConnection) throws -> CappedCount {
        var total = 0
        func add(_ table: String, _ idColumn: String, extra: PostgresQuery? = nil, keepsFairnessKey: Bool = true) throws {
            guard total <= cap else { return }
            var query = PostgresQuery(unsafeSQL: "select count(*)::bigint from (select 1 from \(table) where ")
            if let extra { query.append(extra) }
            query.append(search.conditions(idColumn: idColumn, keepsFairnessKey: keepsFairnessKey))
            query.append(" limit \(cap + 1 - total)) s")
            total += try connection.query(query).rows[0].decode(0, as: Int.self)
        }
        if let states = search.waitingStates {
            var extra = PostgresQuery(unsafeSQL: "state = any(")
            extra.append("\(states)::text[]) and ")
            try add("courier.jobs", "id", extra: extra)
        }
        if search.states.contains(.succeeded) { try add("courier.completed_jobs", "id", keepsFairnessKey: false) }
        if search.states.contains(.dead) { try add("courier.dead_letters", "job_id") }
        return CappedCount(counted: total, cap: cap)
    }

    /// Of `candidates`, the destinations some job, succeeded job, dead letter, breaker or
    /// destination policy uses (so a filter can say "nothing uses that destination").
    public static func destinationsInUse(_ candidates: [String], on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            select d from unnest(\(candidates)::text[]) as c(d)
            where exists (select 1 from courier.jobs j where j.destination = c.d)
               or exists (select 1 from courier.dead_letters l where l.destination = c.d)
               or exists (select 1 from courier.completed_jobs s where s.destination = c.d)
               or exists (select 1 from courier.breakers b where b.destination = c.d)
               or exists (select 1 from courier.destinations p where p.destination = c.d)
            order by d
            """).rows.map { try $0.decode(0, as: String.self) }
    }

    /// What happened to one id of `retry` or `update`.
    public enum SteerOutcome: String, Sendable, Equatable, Encodable {
        /// The waiting job was changed.
        case updated
        /// The job is running: it is not changed (it may finish or be retried on its own).
        case running
        /// No waiting or running job has this id.
        case notFound = "not_found"
    }

    /// Makes waiting jobs (due, scheduled later or backing off) due now. No attempt is
    /// used: only `run_at` changes. A job held by an open breaker stays held until the
    /// breaker lets it go. Returns one outcome per id, in order.
    public static func retryNow(ids: [Int64], on connection: PostgresConnection) throws -> [(id: Int64, outcome: SteerOutcome)] {
        try steer(ids: ids, on: connection) { tx in
            try tx.query("""
                update courier.jobs set run_at = least(run_at, now())
                where id = any(\(ids)) and state = 'available' returning id
                """)
        }
    }

    /// Changes a waiting job's start time and/or priority (nil leaves it as it is).
    public static func update(id: Int64, runAt: Date?, priority: Int?, on connection: PostgresConnection) throws -> SteerOutcome {
        try steer(ids: [id], on: connection) { tx in
            try tx.query("""
                update courier.jobs set run_at = coalesce(\(runAt)::timestamptz, run_at),
                                        priority = coalesce(\(priority)::int, priority)
                where id = \(id) and state = 'available' returning id
                """)
        }[0].outcome
    }

    /// Runs `change` (an UPDATE of waiting jobs returning their ids) and tells per id
    /// whether it changed the job, found it running, or found nothing. A change of the
    /// run time wakes idle workers, as enqueue does.
    static func steer(ids: [Int64], on connection: PostgresConnection,
                      _ change: (PostgresConnection) throws -> PostgresResult) throws -> [(id: Int64, outcome: SteerOutcome)] {
        try connection.withTransaction { tx in
            let changed = Set(try change(tx).rows.map { try $0.decode(0, as: Int64.self) })
            let running = Set(try tx.query("select id from courier.jobs where id = any(\(ids)) and state = 'running'").rows.map {
                try $0.decode(0, as: Int64.self)
            })
            if !changed.isEmpty {
                let queues = try tx.query("select distinct queue from courier.jobs where id = any(\(Array(changed)))").rows.map {
                    try $0.decode(0, as: String.self)
                }
                for queue in queues { try tx.query("select pg_notify('courier_jobs', \(queue))") }
            }
            return ids.map { ($0, changed.contains($0) ? .updated : running.contains($0) ? .running : .notFound) }
        }
    }

    // MARK: - Rows of the other places a job can be

    static let completedColumns = """
        id, kind, queue, destination, method, url, attempt, status, duration_ms, idempotency_key,
        errors::text, created_at, finished_at, signing_secret,
        \(SigningSecretChoice.destinationDefaultSQL(for: "completed_jobs.destination"))
        """

    /// A succeeded job. The archive keeps less than the job had: what it does not keep
    /// (priority, max attempts, headers, timeout, ...) is left out of the record's JSON
    /// (see ``JobRecord/archivedFieldsOnly``), never shown with an invented value.
    static func decodeCompleted(_ row: PostgresRow) throws -> JobRecord {
        var record = JobRecord(
            id: try row.decode(0, as: Int64.self), status: .succeeded, kind: try row.decode(1, as: String.self),
            queue: try row.decode(2, as: String.self), priority: 0, runAt: nil,
            attempt: try row.decode(6, as: Int.self), maxAttempts: try row.decode(6, as: Int.self), deadline: nil,
            destination: try row.decode(3, as: String.self), method: try row.decode(4, as: String.self),
            url: try row.decode(5, as: String?.self).map(Redaction.redactURL), headers: [:], idempotencyKey: try row.decode(9, as: String?.self),
            uniqueKey: nil, timeoutMilliseconds: 0, expectContentType: nil, createdAt: try row.decode(11, as: Date.self),
            errors: AttemptRecord.decodeHistory(try row.decode(10, as: String.self)), leasedBy: nil, leaseExpiresAt: nil,
            cancelRequestedAt: nil, heldSince: nil, deadReason: nil, finishedAt: try row.decode(12, as: Date?.self),
            finalStatus: try row.decode(7, as: Int?.self), durationMilliseconds: try row.decode(8, as: Int?.self)
        )
        record.archivedFieldsOnly = true
        record.setSigningSecret(own: try row.decode(13, as: String?.self), destinationDefault: try row.decode(14, as: String?.self))
        return record
    }

    static let deadColumns = """
        job_id, kind, queue, priority, destination, method, url, headers::text, idempotency_key, unique_key,
        timeout_ms, expect_content_type, max_attempts, deadline, attempt, errors::text, reason, created_at, failed_at,
        signing_secret, \(SigningSecretChoice.destinationDefaultSQL(for: "dead_letters.destination")), id, fairness_key
        """

    /// A dead job, from its dead letter (whose id it names).
    static func decodeDead(_ row: PostgresRow) throws -> JobRecord {
        var record = JobRecord(
            id: try row.decode(0, as: Int64.self), status: .dead, kind: try row.decode(1, as: String.self),
            queue: try row.decode(2, as: String.self), priority: try row.decode(3, as: Int.self), runAt: nil,
            attempt: try row.decode(14, as: Int.self), maxAttempts: try row.decode(12, as: Int.self),
            deadline: try row.decode(13, as: Date?.self), destination: try row.decode(4, as: String.self),
            method: try row.decode(5, as: String.self), url: try row.decode(6, as: String?.self).map(Redaction.redactURL),
            headers: JobRecord.displayHeaders(try row.decode(7, as: String.self)),
            idempotencyKey: try row.decode(8, as: String?.self), uniqueKey: try row.decode(9, as: String?.self),
            timeoutMilliseconds: try row.decode(10, as: Int.self), expectContentType: try row.decode(11, as: String?.self),
            createdAt: try row.decode(17, as: Date.self), errors: AttemptRecord.decodeHistory(try row.decode(15, as: String.self)),
            leasedBy: nil, leaseExpiresAt: nil, cancelRequestedAt: nil, heldSince: nil, deadReason: try row.decode(16, as: String.self),
            finishedAt: try row.decode(18, as: Date?.self), finalStatus: nil, durationMilliseconds: nil
        )
        record.setSigningSecret(own: try row.decode(19, as: String?.self), destinationDefault: try row.decode(20, as: String?.self))
        record.deadLetterID = try row.decode(21, as: Int64.self)
        record.fairnessKey = try row.decode(22, as: String?.self)
        return record
    }
}
