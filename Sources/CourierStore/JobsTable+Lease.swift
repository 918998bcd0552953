import CourierCore
import Foundation
import Postgres

/// Leasing and acknowledging. Every write about a running job is fenced: it
/// matches the job's id, its lease token (`ClaimedJob.lease`, `courier.jobs.lease_seq`,
/// bumped by every claim and by nothing else) and the worker holding it, so a late or
/// re-sent write from a worker that lost its lease changes nothing, even when the same
/// worker holds the job again under a later lease (since migration 0039). (Every way out of
/// `running` clears `leased_by`, so `leased_by = worker` already implies `running`;
/// repeating `state = 'running'` only tempts the planner into scanning every running
/// row through the partial lease index instead of probing the primary key.)
/// Times always come from the database's clock.
extension JobsTable {
    /// A successful attempt to record.
    public struct Success: Sendable, Equatable {
        public var id: Int64
        public var attempt: Int
        /// The lease's fence token (``ClaimedJob/lease``).
        public var lease: Int64
        public var status: Int?
        public var durationMilliseconds: Int
        public init(id: Int64, attempt: Int, lease: Int64, status: Int?, durationMilliseconds: Int) {
            self.id = id
            self.attempt = attempt
            self.lease = lease
            self.status = status
            self.durationMilliseconds = durationMilliseconds
        }
    }

    /// Moves succeeded jobs out of `courier.jobs` into `courier.completed_jobs`, in one
    /// statement, or with `archive: false` deletes them without a record (`--retention 0`).
    /// Returns the ids that were still leased to `worker` and so were recorded.
    @discardableResult
    public static func complete(_ successes: [Success], worker: UUID, archive: Bool = true,
                                on connection: PostgresConnection) throws -> [Int64] {
        guard !successes.isEmpty else { return [] }
        // In id order (lease renewals skip rows locked here, see `renewLeases`).
        let successes = successes.sorted { $0.id < $1.id }
        return try connection.query(PostgresQuery(unsafeSQL: completeSQL, binds: [
            successes.map(\.id), successes.map(\.lease), successes.map { $0.status ?? -1 },
            successes.map(\.durationMilliseconds), worker, archive,
        ])).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// The success acknowledgement: $1 ids, $2 lease tokens, $3 HTTP statuses (-1 for none),
    /// $4 durations in ms, $5 worker id, $6 whether to archive into `completed_jobs`.
    /// Public so benchmarks can run exactly this SQL.
    ///
    /// The fence is id + lease token + `leased_by`: every path out of `running` (retry, hand
    /// back, rescue) clears `leased_by`, so `leased_by = $5` already means "still running
    /// under this worker's lease", and the token says which lease. `courier.complete_jobs`
    /// (sql/schema/jobs.sql; fenced by token since 0039) reaches the rows through primary
    /// key probes and matches the tokens by a hash join, one plan
    /// whatever the statistics of `courier.jobs` say. Skipping the archive is about a fifth
    /// of the database's work per job (pgbench, claim + ack of 100: ~50k jobs/s with it,
    /// ~60k without).
    public static let completeSQL = """
        select courier.complete_jobs($1::bigint[], $2::bigint[], $3::int[], $4::int[], $5::uuid, $6::boolean)
        """

    /// A failed attempt to be retried later.
    public struct Retry: Sendable, Equatable {
        public var id: Int64
        public var attempt: Int
        /// The lease's fence token (``ClaimedJob/lease``).
        public var lease: Int64
        public var delayMilliseconds: Int64
        /// One attempt-history entry, JSON (see `AttemptRecord`).
        public var errorJSON: String
        /// False for an attempt that does not count against `max_attempts` (a throttled
        /// answer of a job with a deadline, see `RetryDecider.usesAttempt`): the claim's
        /// increment is given back, so the next attempt has the same number.
        public var usesAttempt: Bool
        public init(id: Int64, attempt: Int, lease: Int64, delayMilliseconds: Int64, errorJSON: String, usesAttempt: Bool = true) {
            self.id = id
            self.attempt = attempt
            self.lease = lease
            self.delayMilliseconds = delayMilliseconds
            self.errorJSON = errorJSON
            self.usesAttempt = usesAttempt
        }
    }

    /// Puts failed jobs back to wait `delayMilliseconds` (from the database's now),
    /// appending each attempt's error to its history. Returns the ids recorded.
    @discardableResult
    public static func retry(_ retries: [Retry], worker: UUID, on connection: PostgresConnection) throws -> [Int64] {
        guard !retries.isEmpty else { return [] }
        let retries = retries.sorted { $0.id < $1.id }
        // A job an operator cancelled while its attempt ran ends as a `cancelled` dead
        // letter in the same statement (see `courier.retry_jobs`, sql/schema/jobs.sql).
        return try connection.query("""
            select courier.retry_jobs(\(retries.map(\.id))::bigint[], \(retries.map(\.lease))::bigint[],
                                      \(retries.map(\.delayMilliseconds))::bigint[], \(retries.map(\.errorJSON))::text[],
                                      \(retries.map(\.usesAttempt))::boolean[], \(worker)::uuid)
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// A job that will not be retried automatically.
    public struct DeadLetter: Sendable, Equatable {
        public var id: Int64
        public var attempt: Int
        /// The lease's fence token (``ClaimedJob/lease``).
        public var lease: Int64
        public var reason: DeadLetterReason
        /// The last attempt's error entry, JSON; nil when no attempt ran (e.g. a deadline passed while waiting).
        public var errorJSON: String?
        public var lastClass: ErrorClass?
        public var lastStatus: Int?
        public init(id: Int64, attempt: Int, lease: Int64, reason: DeadLetterReason, errorJSON: String?, lastClass: ErrorClass?,
                    lastStatus: Int?) {
            self.id = id
            self.attempt = attempt
            self.lease = lease
            self.reason = reason
            self.errorJSON = errorJSON
            self.lastClass = lastClass
            self.lastStatus = lastStatus
        }
    }

    /// Moves jobs into `courier.dead_letters` with their full request and history, in
    /// the same statement that deletes them. Returns the ids recorded.
    @discardableResult
    public static func deadLetter(_ letters: [DeadLetter], worker: UUID, on connection: PostgresConnection) throws -> [Int64] {
        guard !letters.isEmpty else { return [] }
        let letters = letters.sorted { $0.id < $1.id }
        // A deadline dead letter whose attempt never ran goes back instead while the
        // database's clock says the deadline is ahead (see `courier.dead_letter_jobs`, 0034).
        return try connection.query("""
            select courier.dead_letter_jobs(\(letters.map(\.id))::bigint[], \(letters.map(\.lease))::bigint[],
                                            \(letters.map(\.reason.rawValue))::text[], \(letters.map { $0.errorJSON ?? "" })::text[],
                                            \(letters.map { $0.lastClass?.rawValue ?? "" })::text[],
                                            \(letters.map { $0.lastStatus ?? -1 })::int[], \(worker)::uuid)
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// Returns leased jobs that never started (shutdown, a destination found held back)
    /// to the queue without consuming their attempt, not to run for `notBeforeMilliseconds`
    /// (0: at once). `leases` are the leases' fence tokens, one per id.
    @discardableResult
    public static func handBack(ids: [Int64], leases: [Int64], worker: UUID, notBeforeMilliseconds: Int64 = 0,
                                on connection: PostgresConnection) throws -> [Int64] {
        guard !ids.isEmpty else { return [] }
        return try connection.query("""
            select courier.hand_back_jobs(\(ids)::bigint[], \(leases)::bigint[], \(worker)::uuid, \(notBeforeMilliseconds)::bigint)
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// One job a worker may not run because of its own configuration, and why (no secret
    /// values: the reason names a secret or an address, never a resolved value).
    public struct Refusal: Sendable, Equatable {
        public var id: Int64
        /// The lease's fence token.
        public var lease: Int64
        public var reason: String
        public init(id: Int64, lease: Int64, reason: String) {
            self.id = id
            self.lease = lease
            self.reason = reason
        }
    }

    /// Returns refused jobs to the queue like ``handBack(ids:leases:worker:notBeforeMilliseconds:on:)``,
    /// counting each refusal with its job (`courier.refuse_jobs`, sql/schema/jobs.sql): how many
    /// in a row since its last real attempt, since when, and the last reason.
    @discardableResult
    public static func refuse(_ refusals: [Refusal], worker: UUID, notBeforeMilliseconds: Int64,
                              on connection: PostgresConnection) throws -> [Int64] {
        guard !refusals.isEmpty else { return [] }
        return try connection.query("""
            select courier.refuse_jobs(\(refusals.map(\.id))::bigint[], \(refusals.map(\.lease))::bigint[], \(worker)::uuid,
                                       \(notBeforeMilliseconds)::bigint, \(refusals.map(\.reason))::text[])
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// Ids of jobs leased to `worker` whose cancellation has been requested.
    public static func cancelRequested(worker: UUID, on connection: PostgresConnection) throws -> [Int64] {
        try connection.query("""
            select id from courier.jobs
            where state = 'running' and leased_by = \(worker) and cancel_requested_at is not null
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// What one rescue pass did.
    public struct RescueResult: Sendable, Equatable {
        public var requeued: Int
        public var deadLettered: Int
        /// False when another worker was rescuing at the same moment, so this one did nothing.
        public var ranHere: Bool
        public init(requeued: Int, deadLettered: Int, ranHere: Bool) {
            self.requeued = requeued
            self.deadLettered = deadLettered
            self.ranHere = ranHere
        }
    }

    /// ``HTTPMethod/idempotent``, bound into the rescue statement so SQL and Swift share one list.
    static let idempotentMethodNames = HTTPMethod.idempotent.map(\.rawValue)

    /// Recovers jobs whose lease expired (their worker died or hung). The lost attempt
    /// counts, recorded as `lease_expired`; since the request may have been delivered, a
    /// job is put back only if it is safe to repeat (idempotent method or an idempotency
    /// key) and has attempts left, and otherwise dead-lettered as `ambiguous` or
    /// `exhausted`. Only one worker in the fleet rescues at a time (advisory lock).
    /// - Parameter now: the time leases are judged against; nil (what workers pass) is
    ///   the database's clock. Tests pass a later time instead of rewriting rows.
    public static func rescueExpired(limit: Int = 1000, now: Date? = nil, on connection: PostgresConnection) throws -> RescueResult {
        try connection.withTransaction { tx in
            let locked = try tx.query(rescueLockAndSettings).rows.first?.decode(0, as: Bool.self) ?? false
            guard locked else { return RescueResult(requeued: 0, deadLettered: 0, ranHere: false) }
            let rows = try tx.query(rescueStatement(limit: limit, now: now)).rows
            let requeued = try rows.first?.decode(0, as: Int.self) ?? 0
            let dead = try rows.first?.decode(1, as: Int.self) ?? 0
            if requeued > 0 {
                try tx.query("select pg_notify('courier_jobs', '')")
            }
            return RescueResult(requeued: requeued, deadLettered: dead, ranHere: true)
        }
    }

    /// The rescue's first statement: the fleet-wide lock (true when taken) and, for the
    /// rest of the transaction, the planner settings of the acknowledgement functions
    /// (sql/schema/jobs.sql). The rescue joins the rows it took to `courier.jobs`; with nested
    /// loops, merge joins, sequential and bitmap scans off, those joins stay primary key
    /// probes and hash joins whatever the statistics say (the soak saw 507 ms rescues
    /// on statistics that said the table was empty). It stays a Swift statement, not a
    /// function, because it shares the dead-letter insert (`insertFromJobs`) and the
    /// idempotent-method list with Swift.
    static let rescueLockAndSettings = PostgresQuery(unsafeSQL: """
        select pg_try_advisory_xact_lock($1),
               set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
               set_config('enable_nestloop', 'off', true), set_config('enable_mergejoin', 'off', true)
        """, binds: [rescueLockKey])

    /// One rescue pass over up to `limit` expired leases; returns (requeued, dead-lettered).
    /// Run after ``rescueLockAndSettings`` in the same transaction.
    static func rescueStatement(limit: Int, now: Date?) -> PostgresQuery {
        var rescue: PostgresQuery = """
            with expired as (
                select id from courier.jobs
                where state = 'running' and lease_expires_at < coalesce(\(now)::timestamptz, now())
                order by lease_expires_at limit \(limit)
                for update skip locked
            ),
            judged as (
                select j.id,
                       case when j.method <> all(\(Self.idempotentMethodNames)::text[])
                                 and j.idempotency_key is null then 'ambiguous'
                            when j.attempt >= j.max_attempts then 'exhausted'
                       end as verdict,
                       jsonb_build_object('attempt', j.attempt, 'class', 'lease_expired',
                           'message', 'the worker holding the lease stopped renewing it; the request may have been sent',
                           'started_at', j.attempted_at, 'worker', j.leased_by::text,
                           'duration_ms', (extract(epoch from now() - j.attempted_at) * 1000)::bigint) as error
                from courier.jobs j
                where j.id = any(array(select id from expired))
            ),
            requeued as (
                update courier.jobs j
                set state = 'available', run_at = now(), leased_by = null, lease_expires_at = null,
                    errors = j.errors || jsonb_build_array(judged.error)
                from judged
                where j.id = any(array(select id from judged where verdict is null))
                  and j.id = judged.id and judged.verdict is null
                returning j.id
            ),
            gone as (
                delete from courier.jobs j using judged
                where j.id = any(array(select id from judged where verdict is not null))
                  and j.id = judged.id and judged.verdict is not null
                returning j.*, judged.verdict, judged.error
            ),
            dead as (

            """
        rescue.append(DeadLettersTable.insertFromJobs(
            source: "gone", reason: "verdict", errors: "errors || jsonb_build_array(error)", lastClass: "'lease_expired'",
            worker: "leased_by::text", returning: "1"))
        rescue.append("""

            )
            select (select count(*) from requeued)::bigint, (select count(*) from dead)::bigint
            """)
        return rescue
    }

    /// Deletes one batch of succeeded-job records older than the retention, oldest first
    /// through `completed_jobs_finished_at_idx`, so its cost is the batch's, whatever the
    /// archive's size. Rows another worker's prune has locked are skipped (`SKIP LOCKED`):
    /// concurrent prunes delete different rows instead of queueing on the same ones.
    /// Returns how many were deleted (a full `batch` means more may be due). `now` nil is
    /// the database's clock.
    public static func pruneCompleted(olderThanMilliseconds: Int64, batch: Int = 5000, now: Date? = nil,
                                      on connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            with doomed as (
                select id from courier.completed_jobs
                where finished_at < coalesce(\(now)::timestamptz, now()) - \(olderThanMilliseconds) * interval '1 millisecond'
                order by finished_at
                limit \(batch)
                for update skip locked
            )
            delete from courier.completed_jobs c using doomed where c.id = doomed.id
            """)
    }

    /// What one `courier.reclaim_jobs` call did: the ring slots of courier.jobs it truncated
    /// and the jobs it moved from the next slot to courier.jobs_parked.
    public struct ReclaimResult: Sendable, Equatable {
        public var truncated: [String]
        public var moved: Int
    }

    /// Truncates the ring slots whose jobs have all left and moves up to `moveLimit` jobs still
    /// waiting in the next slot to courier.jobs_parked (sql/0048). One worker at a time does
    /// it; the others get an empty result. `now` (tests) stands for the database's clock.
    public static func reclaim(moveLimit: Int = 5000, now: Date? = nil, on connection: PostgresConnection) throws -> ReclaimResult {
        let row = try connection.query("""
            select truncated, moved from courier.reclaim_jobs(\(moveLimit)::int, coalesce(\(now)::timestamptz, now()))
            """).rows[0]
        return ReclaimResult(truncated: try row.decode(0, as: [String].self), moved: try row.decode(1, as: Int.self))
    }

    /// "courier-rescue" as an advisory lock key.
    static let rescueLockKey: Int64 = 0x6375_7272_6573_6375
}

extension JobsTable {
    /// Claims the one job a probe runs: a runnable job of `destination`, only while
    /// `worker` holds that breaker's probe at `generation`.
    public static func claimProbe(destination: String, generation: Int64, queues: [String], worker: UUID,
                                  leaseMilliseconds: Int, on connection: PostgresConnection) throws -> ClaimedJob? {
        let sql = """
            with picked as (
                select c.id from courier.jobs c
                where c.state = 'available' and c.destination = $1 and c.queue = any($2) and c.run_at <= now()
                  and exists (select 1 from courier.breakers b
                              where b.destination = $1 and b.state = 'half_open' and b.probe_owner = $3 and b.generation = $5)
                -- Prefer jobs with the fewest attempts, so one job does not pay for every probe.
                order by c.attempt, c.priority, c.run_at, c.id
                limit 1
                for update skip locked
            )
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, lease_seq = j.lease_seq + 1, leased_by = $3,
                lease_expires_at = now() + $4 * interval '1 millisecond', attempted_at = now(),
                -- The probe's job is sent while still held: what the hold has cost it so far goes
                -- to held_ms for its span, and the hold is counted on from now, never twice.
                held_ms = case when j.held_since is null then j.held_ms
                               else coalesce(j.held_ms, 0)
                                    + greatest(0, (extract(epoch from now() - greatest(j.held_since, j.run_at)) * 1000)::bigint) end,
                held_since = case when j.held_since is not null then now() end
            from picked where j.id = picked.id
            returning \(ClaimedJob.columns)
            """
        return try connection.query(PostgresQuery(unsafeSQL: sql, binds: [destination, queues, worker, leaseMilliseconds, generation]))
            .rows.first.map(ClaimedJob.init(row:))
    }
}
