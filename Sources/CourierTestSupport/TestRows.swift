import CourierCore
import CourierStore
import Foundation
import Postgres

/// The tests' one way to put rows into a state: jobs, breakers, destinations and dead
/// letters. It writes through the real store functions where they exist
/// (`JobsTable.enqueue`, `DestinationsTable.merge`, `BreakersTable.force`) and through
/// bound-parameter SQL where a state can only be reached by hand (a lease that ran out,
/// a cooldown that passed, a dead letter without the job's history). Times are offsets
/// from the database's `now()`, so the test's clock and the server's never disagree.
///
///     let rows = TestRows(db)
///     let ids = try rows.jobs(3, url: "https://e.com/x") { $0.queue = "q" }
///     try rows.expireLeases(ids)
///     try rows.breaker("https://e.com:443", state: .open, openUntil: .seconds(-1))
public struct TestRows {
    public let db: PostgresConnection

    public init(_ db: PostgresConnection) { self.db = db }

    // MARK: Jobs

    /// Enqueues one job through `JobsTable.enqueue` (the contract's defaults) and returns its id.
    @discardableResult
    public func job(url: String = "https://example.com/hook", _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> Int64 {
        var request = EnqueueRequest(url: url)
        configure(&request)
        return try JobsTable.enqueue(request, on: db)
    }

    /// Enqueues `n` jobs for `url`, one statement each, and returns their ids in order.
    @discardableResult
    public func jobs(_ n: Int, url: String = "https://example.com/hook", _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> [Int64] {
        try (0..<n).map { _ in try job(url: url, configure) }
    }

    /// Enqueues `n` jobs in one bulk write (`JobsTable.enqueueMany`) when their ids do not
    /// matter; `numbered` gives job `i` the url `url + "/i"` (distinct urls, one destination).
    public func bulkJobs(_ n: Int, url: String, numbered: Bool = false,
                         _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws {
        let requests = (0..<n).map { i in
            var request = EnqueueRequest(url: numbered ? url + "/\(i)" : url)
            configure(&request)
            return request
        }
        _ = try JobsTable.enqueueMany(requests, on: db)
    }

    /// Which jobs a state change touches: the ids given, or every job.
    public enum Selection: Sendable {
        case all
        case ids([Int64])
        case destination(String)
        /// Every job in this state (`available`, `running`).
        case state(String)

        public static func id(_ id: Int64) -> Selection { .ids([id]) }
    }

    private func update(_ set: String, _ selection: Selection, binds: [any PostgresEncodable] = []) throws {
        let n = binds.count + 1
        let (filter, bind): (String, (any PostgresEncodable)?) = switch selection {
        case .all: ("true", nil)
        case .ids(let ids): ("id = any($\(n)::bigint[])", ids)
        case .destination(let destination): ("destination = $\(n)::text", destination)
        case .state(let state): ("state = $\(n)::text", state)
        }
        try db.execute(PostgresQuery(unsafeSQL: "update courier.jobs set \(set) where \(filter)",
                                     binds: binds + (bind.map { [$0] } ?? [])))
    }

    /// Running jobs go back to the queue as if never leased (state available, no lease);
    /// with `resetAttempts` their attempt count returns to 0 too.
    public func release(_ selection: Selection = .all, resetAttempts: Bool = false) throws {
        try update("state = 'available', leased_by = null, lease_expires_at = null" + (resetAttempts ? ", attempt = 0" : ""), selection)
    }

    /// Puts jobs into `running` under a lease of a worker no one runs, expiring `leaseFor` from now.
    public func markRunning(_ selection: Selection, attempt: Int = 1, leaseFor: Duration = .seconds(60)) throws {
        try update("state = 'running', attempt = $1::int, leased_by = gen_random_uuid(), "
                   + "lease_expires_at = now() + $2::float8 * interval '1 millisecond'", selection,
                   binds: [attempt, leaseFor.sqlMilliseconds])
    }

    /// The jobs' leases ran out `ago` before now (what the rescuer looks for).
    public func expireLeases(_ selection: Selection = .all, ago: Duration = .seconds(1)) throws {
        try update("lease_expires_at = now() - $1::float8 * interval '1 millisecond'", selection, binds: [ago.sqlMilliseconds])
    }

    /// The jobs fall due `offset` from now (negative: overdue).
    public func setRunAt(_ selection: Selection, _ offset: Duration) throws {
        try update("run_at = now() + $1::float8 * interval '1 millisecond'", selection, binds: [offset.sqlMilliseconds])
    }

    /// The jobs' attempt count, as if they had been tried `attempt` times.
    public func setAttempt(_ attempt: Int, _ selection: Selection) throws {
        try update("attempt = $1::int", selection, binds: [attempt])
    }

    public func setPriority(_ priority: Int, _ selection: Selection) throws {
        try update("priority = $1::int", selection, binds: [priority])
    }

    /// An operator asked to cancel the jobs (`cancel_requested_at = now()`).
    public func requestCancel(_ selection: Selection) throws {
        try update("cancel_requested_at = now()", selection)
    }

    /// The jobs wait on their destination since now (`held_since = now()`).
    public func hold(_ selection: Selection) throws {
        try update("held_since = now()", selection)
    }

    /// The jobs' deadline passed `ago` before now.
    public func expireDeadline(_ selection: Selection, ago: Duration = .seconds(1)) throws {
        try update("deadline = now() - $1::float8 * interval '1 millisecond'", selection, binds: [ago.sqlMilliseconds])
    }

    // MARK: Breakers

    /// A breaker row for `destination` in `state`, written by hand (upserted): `openUntil`
    /// and `notBefore` are offsets from now (nil leaves them null); `cooldown` sets
    /// `cooldown_ms`. For an operator's force use ``forceBreaker(_:_:)``.
    public func breaker(_ destination: String, state: BreakerRowState = .closed, openUntil: Duration? = nil,
                        notBefore: Duration? = nil, cooldown: Duration? = nil, generation: Int64? = nil) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            insert into courier.breakers (destination, state, open_until, not_before)
            values ($1::text, $2::text, now() + $3::float8 * interval '1 millisecond', now() + $4::float8 * interval '1 millisecond')
            on conflict (destination) do update set state = excluded.state, open_until = excluded.open_until,
                not_before = excluded.not_before
            """, binds: [destination, state.rawValue, openUntil?.sqlMilliseconds, notBefore?.sqlMilliseconds]))
        if let cooldown {
            try setBreaker(destination, "cooldown_ms = $2::bigint", Int64(cooldown.sqlMilliseconds))
        }
        if let generation {
            try setBreaker(destination, "generation = $2::bigint", generation)
        }
    }

    public enum BreakerRowState: String, Sendable { case closed, open, halfOpen = "half_open" }

    /// The operator's force (`BreakersTable.force`), as `jobctl breaker open|close` does it.
    public func forceBreaker(_ destination: String, _ action: BreakersTable.ForceAction) throws {
        try BreakersTable.force(destination: destination, action: action, on: db)
    }

    /// The open breaker's cooldown passed `ago` before now (`open_until`): the next claim may probe.
    public func elapseCooldown(_ destination: String, ago: Duration = .milliseconds(1)) throws {
        try setBreaker(destination, "open_until = now() - $2::float8 * interval '1 millisecond'", ago.sqlMilliseconds)
    }

    /// The half-open breaker's probe lease ran out `ago` before now.
    public func expireProbeLease(_ destination: String, ago: Duration = .milliseconds(1)) throws {
        try setBreaker(destination, "probe_lease_until = now() - $2::float8 * interval '1 millisecond'", ago.sqlMilliseconds)
    }

    /// The breaker's cooldown (`cooldown_ms`).
    public func setCooldown(_ destination: String, _ cooldown: Duration) throws {
        try setBreaker(destination, "cooldown_ms = $2::bigint", Int64(cooldown.sqlMilliseconds))
    }

    /// The destination's Retry-After pause (`not_before`): an offset from now, or nil for none.
    /// With `destination` nil, every breaker row.
    public func setNotBefore(_ destination: String?, _ offset: Duration?) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            update courier.breakers set not_before = now() + $2::float8 * interval '1 millisecond'
            where $1::text is null or destination = $1::text
            """, binds: [destination, offset?.sqlMilliseconds]))
    }

    private func setBreaker(_ destination: String, _ set: String, _ value: any PostgresEncodable) throws {
        try db.execute(PostgresQuery(unsafeSQL: "update courier.breakers set \(set) where destination = $1::text",
                                     binds: [destination, value]))
    }

    // MARK: Destinations

    /// Sets a destination's policy through `DestinationsTable.merge` (the jobctl path).
    @discardableResult
    public func destination(_ policy: DestinationsTable.Policy) throws -> DestinationsTable.Policy {
        try DestinationsTable.merge(policy, on: db)
    }

    /// The destinations' slow-start ramp began `ago` before now (nil `destination`: all of them).
    public func rampStarted(_ destination: String? = nil, ago: Duration) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            update courier.destinations set ramp_started_at = now() - $2::float8 * interval '1 millisecond'
            where $1::text is null or destination = $1::text
            """, binds: [destination, ago.sqlMilliseconds]))
    }

    /// The destinations' token buckets refill as if `elapsed` more time had passed since
    /// their level was last written (`tokens_at` moved back; nil `destination`: all of them).
    public func refillTokens(_ destination: String? = nil, for elapsed: Duration) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            update courier.destinations set tokens_at = tokens_at - $2::float8 * interval '1 millisecond'
            where $1::text is null or destination = $1::text
            """, binds: [destination, elapsed.sqlMilliseconds]))
    }

    // MARK: Schedules

    /// An HTTP job template POSTing to `url` (what `jobctl schedule add --url` stores).
    public static func httpTemplate(_ url: String) -> String {
        #"{"url": "\#(url)", "method": "POST"}"#
    }

    /// Adds a schedule through `SchedulesTable.add` (the jobctl path): every `everySeconds`
    /// or on `cron`, with `missed` and `paused` as given; `template` is the job's JSON.
    public func schedule(_ name: String, everySeconds: Int64? = nil, cron: String? = nil,
                         template: String = TestRows.httpTemplate("https://hooks.example.com/scheduled"),
                         missed: MissedRunPolicy = .default, paused: Bool = false) throws {
        var schedule = SchedulesTable.Schedule(name: name, cron: cron, everySeconds: everySeconds, template: template)
        schedule.missed = missed
        try SchedulesTable.add(schedule, on: db)
        if paused { _ = try SchedulesTable.setPaused(name, true, on: db) }
    }

    // MARK: Dead letters

    /// What each dead letter ``deadLetters(_:_:)`` writes holds: an HTTP job's columns, its
    /// last attempt and when it was created, failed and (optionally) replayed, as offsets
    /// before now.
    public struct DeadLetter: Sendable {
        public var reason = "exhausted"
        public var queue = "default"
        public var destination = "https://c.example.com:443"
        public var url = "https://c.example.com/x"
        /// Row `i` (from 0) gets the url `url + "/i"` and the idempotency key `idempotencyKey + "-i"`.
        public var numbered = false
        /// The headers, a JSON object.
        public var headers = "{}"
        public var body: String?
        public var idempotencyKey: String?
        public var deadline: Date?
        public var attempt = 5
        /// nil: the attempt, and at least 5.
        public var maxAttempts: Int?
        /// The attempt history, a JSON array (nil: none).
        public var errors: String?
        public var lastClass: String?
        public var lastStatus: Int?
        public var worker: String?
        public var createdAgo: Duration = .seconds(3600)
        public var failedAgo: Duration = .seconds(1800)
        public var replayedAgo: Duration?

        public init() {}
    }

    /// `n` dead letters written by hand (no job history behind them), each as `configure`
    /// sets it, in one statement. Each carries a fresh job id from the jobs' sequence;
    /// returns the dead letters' ids and those job ids, in order.
    @discardableResult
    public func deadLetters(_ n: Int, _ configure: (inout DeadLetter) -> Void) throws -> [(id: Int64, jobID: Int64)] {
        var d = DeadLetter()
        configure(&d)
        return try db.query(PostgresQuery(unsafeSQL: """
            insert into courier.dead_letters (job_id, reason, kind, queue, priority, destination, method, url, headers, body,
                timeout_ms, idempotency_key, max_attempts, deadline, attempt, errors, last_class, last_status, worker,
                created_at, failed_at, replayed_at)
            select nextval(pg_get_serial_sequence('courier.jobs', 'id')), $2::text, 'http', $3::text, 0, $4::text, 'POST',
                case when $6::bool then $5::text || '/' || (g - 1) else $5::text end, $7::jsonb, $8::text, 30000,
                case when $6::bool then $9::text || '-' || (g - 1) else $9::text end, coalesce($10::int, greatest($12::int, 5)),
                $11::timestamptz, $12::int, coalesce($13::jsonb, '[]'), $14::text, $15::int, $16::text,
                now() - $17::float8 * interval '1 millisecond', now() - $18::float8 * interval '1 millisecond',
                now() - $19::float8 * interval '1 millisecond'
            from generate_series(1, $1::int) g
            returning id, job_id
            """, binds: [n, d.reason, d.queue, d.destination, d.url, d.numbered, d.headers, d.body, d.idempotencyKey, d.maxAttempts,
                     d.deadline, d.attempt, d.errors, d.lastClass, d.lastStatus, d.worker, d.createdAgo.sqlMilliseconds,
                     d.failedAgo.sqlMilliseconds, d.replayedAgo?.sqlMilliseconds]))
            .rows.map { (id: try $0.decode(0, as: Int64.self), jobID: try $0.decode(1, as: Int64.self)) }
    }

    /// `n` dead letters as ``deadLetters(_:_:)`` writes them, `exhausted` after five attempts
    /// by default, created `createdAgo` and failed `failedAgo` before now and, with
    /// `replayedAgo`, replayed that long ago. Returns their job ids.
    @discardableResult
    public func deadLetters(_ n: Int, destination: String = "https://c.example.com:443", url: String = "https://c.example.com/x",
                            reason: String = "exhausted", queue: String = "default", attempt: Int = 5,
                            createdAgo: Duration = .seconds(3600), failedAgo: Duration = .seconds(1800),
                            replayedAgo: Duration? = nil) throws -> [Int64] {
        try deadLetters(n) { d in
            d.destination = destination
            d.url = url
            d.reason = reason
            d.queue = queue
            d.attempt = attempt
            d.createdAgo = createdAgo
            d.failedAgo = failedAgo
            d.replayedAgo = replayedAgo
        }.map(\.jobID)
    }
}

private extension Duration {
    /// Whole and fractional milliseconds, for `interval '1 millisecond'` arithmetic in SQL.
    var sqlMilliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}
