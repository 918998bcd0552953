import CourierCore
import Foundation
import Postgres

extension JobsTable {
    /// Filters for `jobctl list`. `nil` means any.
    public struct ListFilter: Sendable, Equatable {
        public var state: String?
        public var queue: String?
        public var destination: String?
        /// Jobs of this fairness key only.
        public var fairnessKey: String?
        public var limit: Int = 100
        public init(state: String? = nil, queue: String? = nil, destination: String? = nil, fairnessKey: String? = nil,
                    limit: Int = 100) {
            self.state = state
            self.queue = queue
            self.destination = destination
            self.fairnessKey = fairnessKey
            self.limit = limit
        }
    }

    static let waitingColumns = """
        id, kind, queue, state, priority, run_at, attempt, max_attempts, deadline, destination, method, url,
        headers::text, idempotency_key, unique_key, timeout_ms, expect_content_type, created_at, errors::text,
        leased_by::text, lease_expires_at, cancel_requested_at, held_since, signing_secret,
        \(SigningSecretChoice.destinationDefaultSQL(for: "jobs.destination")),
        case when refused_attempt = attempt then refusals else 0 end, refused_since, refusal, traceparent, tracestate,
        fairness_key
        """

    static func decodeWaiting(_ row: PostgresRow) throws -> JobRecord {
        var record = JobRecord(
            id: try row.decode(0, as: Int64.self),
            status: try row.decode(3, as: String.self) == "running" ? .running : .available,
            kind: try row.decode(1, as: String.self),
            queue: try row.decode(2, as: String.self),
            priority: try row.decode(4, as: Int.self),
            runAt: try row.decode(5, as: Date?.self),
            attempt: try row.decode(6, as: Int.self),
            maxAttempts: try row.decode(7, as: Int.self),
            deadline: try row.decode(8, as: Date?.self),
            destination: try row.decode(9, as: String.self),
            method: try row.decode(10, as: String.self),
            url: try row.decode(11, as: String?.self).map(Redaction.redactURL),
            headers: JobRecord.displayHeaders(try row.decode(12, as: String.self)),
            idempotencyKey: try row.decode(13, as: String?.self),
            uniqueKey: try row.decode(14, as: String?.self),
            timeoutMilliseconds: try row.decode(15, as: Int.self),
            expectContentType: try row.decode(16, as: String?.self),
            createdAt: try row.decode(17, as: Date.self),
            errors: AttemptRecord.decodeHistory(try row.decode(18, as: String.self)),
            leasedBy: try row.decode(19, as: String?.self),
            leaseExpiresAt: try row.decode(20, as: Date?.self),
            cancelRequestedAt: try row.decode(21, as: Date?.self),
            heldSince: try row.decode(22, as: Date?.self)
        )
        record.setSigningSecret(own: try row.decode(23, as: String?.self), destinationDefault: try row.decode(24, as: String?.self))
        // A run of refusals counts while no attempt was made since its last one (courier.refuse_jobs).
        if let count = try row.decode(25, as: Int?.self), count > 0,
           let since = try row.decode(26, as: Date?.self), let reason = try row.decode(27, as: String?.self) {
            record.refusal = JobRecord.Refusal(count: count, since: since, reason: reason)
        }
        record.traceparent = try row.decode(28, as: String?.self)
        record.tracestate = try row.decode(29, as: String?.self)
        record.fairnessKey = try row.decode(30, as: String?.self)
        return record
    }

    /// Waiting and running jobs matching `filter`, oldest first.
    public static func list(_ filter: ListFilter, on connection: PostgresConnection) throws -> [JobRecord] {
        let sql = """
            select \(waitingColumns) from courier.jobs
            where ($1::text is null or state = $1) and ($2::text is null or queue = $2)
              and ($3::text is null or destination = $3) and ($5::text is null or fairness_key = $5)
            order by id limit $4
            """
        return try connection.query(PostgresQuery(unsafeSQL: sql, binds: [filter.state, filter.queue, filter.destination, filter.limit,
                                                                          filter.fairnessKey]))
            .rows.map(decodeWaiting)
    }

    /// A job by id wherever it is now: waiting or running, succeeded (within retention) or dead.
    public static func get(id: Int64, on connection: PostgresConnection) throws -> JobRecord? {
        if let row = try connection.query(PostgresQuery(unsafeSQL: "select \(waitingColumns) from courier.jobs where id = $1", binds: [id])).rows.first {
            return try decodeWaiting(row)
        }
        if let row = try connection.query(PostgresQuery(unsafeSQL: "select \(completedColumns) from courier.completed_jobs where id = $1",
                                                        binds: [id])).rows.first {
            return try decodeCompleted(row)
        }
        if let row = try connection.query(PostgresQuery(unsafeSQL: """
            select \(deadColumns) from courier.dead_letters where job_id = $1 order by id desc limit 1
            """, binds: [id])).rows.first {
            return try decodeDead(row)
        }
        return nil
    }

    /// What `cancel` did with one id.
    public enum CancelOutcome: String, Sendable, Equatable, Encodable {
        /// A waiting job, moved to the dead letters as `cancelled`.
        case cancelled
        /// A running job: its worker is asked to abort the request and record the cancellation.
        case cancelRequested = "cancel_requested"
        /// No waiting or running job has this id.
        case notFound = "not_found"
    }

    /// Cancels jobs: waiting ones go to the dead letters as `cancelled` in this transaction;
    /// running ones are flagged for their worker. Returns one outcome per id, in order.
    ///
    /// The rows are locked first (in id order, as every other multi-row write here), so a
    /// job that moves between running and waiting meanwhile is judged in its new state
    /// rather than missed by both statements. The notification carries no ids: workers
    /// read which of their jobs were cancelled from the table, so any number can be cancelled.
    public static func cancel(ids: [Int64], on connection: PostgresConnection) throws -> [(id: Int64, outcome: CancelOutcome)] {
        try connection.withTransaction { tx in
            try tx.query("select id from courier.jobs where id = any(\(ids)) order by id for update")
            var recordCancelled: PostgresQuery = """
                with gone as (
                    delete from courier.jobs where id = any(\(ids)) and state = 'available' returning *
                )

                """
            recordCancelled.append(DeadLettersTable.insertFromJobs(
                source: "gone", reason: "'cancelled'", errors: "errors", lastClass: "'cancelled'"))
            let cancelled = Set(try tx.query(recordCancelled).rows.map { try $0.decode(0, as: Int64.self) })
            let flagged = Set(try tx.query("""
                update courier.jobs set cancel_requested_at = coalesce(cancel_requested_at, now())
                where id = any(\(ids)) and state = 'running'
                returning id
                """).rows.map { try $0.decode(0, as: Int64.self) })
            if !flagged.isEmpty {
                try tx.query("select pg_notify('courier_cancel', '')")
            }
            return ids.map { id in
                (id, cancelled.contains(id) ? .cancelled : flagged.contains(id) ? .cancelRequested : .notFound)
            }
        }
    }
}
