import CourierCore
import Foundation
import Postgres

/// The statements about `courier.jobs` that enqueue, inspect and cancel jobs.
/// (Leasing and acknowledging live in `JobsTable+Lease.swift`.)
public enum JobsTable {
    /// Enqueues one job through `courier.enqueue(...)`, so SQL callers and Swift callers
    /// share one set of rules. Returns the new job's id, or the id of the waiting or
    /// running job that already holds `uniqueKey`.
    public static func enqueue(_ request: EnqueueRequest, on connection: PostgresConnection) throws -> Int64 {
        let query: PostgresQuery
        let headers = PostgresJSON(request.headersJSON)
        switch request.idempotencyKey {
        case .generated:
            query = """
                select courier.enqueue(url => \(request.url)::text, method => \(request.method)::text, headers => \(headers),
                    body => \(request.body)::text, queue => \(request.queue)::text, priority => \(request.priority)::int,
                    run_at => coalesce(\(request.runAt)::timestamptz, now()), max_attempts => \(request.maxAttempts)::int,
                    deadline => \(request.deadline), unique_key => \(request.uniqueKey)::text, destination => \(request.destination)::text,
                    timeout_ms => \(request.timeoutMilliseconds)::int, expect_content_type => \(request.expectContentType)::text,
                    signing_secret => \(request.signingSecret)::text, traceparent => \(request.traceparent)::text,
                    tracestate => \(request.tracestate)::text, fairness_key => \(request.fairnessKey)::text)
                """
        case .custom, .none:
            let key: String? = if case .custom(let key) = request.idempotencyKey { key } else { nil }
            query = """
                select courier.enqueue(url => \(request.url)::text, method => \(request.method)::text, headers => \(headers),
                    body => \(request.body)::text, queue => \(request.queue)::text, priority => \(request.priority)::int,
                    run_at => coalesce(\(request.runAt)::timestamptz, now()), max_attempts => \(request.maxAttempts)::int,
                    deadline => \(request.deadline), unique_key => \(request.uniqueKey)::text, destination => \(request.destination)::text,
                    timeout_ms => \(request.timeoutMilliseconds)::int, expect_content_type => \(request.expectContentType)::text,
                    signing_secret => \(request.signingSecret)::text, idempotency_key => \(key)::text,
                    traceparent => \(request.traceparent)::text, tracestate => \(request.tracestate)::text,
                    fairness_key => \(request.fairnessKey)::text)
                """
        }
        guard let row = try connection.query(query).rows.first else {
            throw PostgresError(kind: .protocolViolation, message: "courier.enqueue returned no row")
        }
        return try row.decode(0, as: Int64.self)
    }

    /// The outcome of a bulk enqueue.
    public struct BulkResult: Sendable, Equatable {
        /// Jobs inserted.
        public var inserted: Int
        /// Lines skipped because a waiting or running job already held their `unique_key`.
        public var skippedByUniqueKey: Int
    }

    /// Enqueues many jobs in one transaction with COPY: all or nothing.
    ///
    /// Each request should have passed `validate()`; the table's constraints are the
    /// backstop. Idempotency keys are generated here for `.generated`. Without any
    /// `unique_key`, rows are encoded here and copied straight into `courier.jobs`, with
    /// destinations derived here (as `courier.destination_of` would), jobs without
    /// `run_at` getting the transaction's `now()`, and jobs of a destination whose
    /// breaker is open starting out held, exactly as `courier.enqueue` would. With unique
    /// keys, the rows go through a staging table so the key rule is applied in SQL.
    /// - Parameters:
    ///   - chunkSize: rows between progress reports (and per COPY on the staging path).
    ///   - progress: called with the number of rows loaded so far.
    public static func enqueueMany(
        _ requests: [EnqueueRequest],
        on connection: PostgresConnection,
        chunkSize: Int = 20_000,
        progress: ((Int) -> Void)? = nil
    ) throws -> BulkResult {
        try connection.withTransaction { tx in
            let result: BulkResult
            if try !canCopyJobs(on: tx) {
                // An enqueuer (courier_enqueue alone) may only call courier.enqueue.
                result = try enqueueThroughFunction(requests, on: tx, progress: progress)
            } else if requests.contains(where: { $0.uniqueKey != nil }) {
                result = try enqueueStaged(requests, on: tx, chunkSize: chunkSize, progress: progress)
            } else {
                let inserted = try enqueueDirect(requests, on: tx, chunkSize: chunkSize, progress: progress)
                result = BulkResult(inserted: inserted, skippedByUniqueKey: 0)
            }
            for queue in Set(requests.map(\.queue)).sorted() {
                try tx.query("select pg_notify('courier_jobs', \(queue))")
            }
            return result
        }
    }

    /// The direct path: one COPY into `courier.jobs`, rows encoded on a second thread
    /// while this one sends, so the encoding overlaps the server's inserting.
    static func enqueueDirect(_ requests: [EnqueueRequest], on tx: PostgresConnection, chunkSize: Int,
                              progress: ((Int) -> Void)?) throws -> Int {
        let now = try tx.query("select now()::text").rows[0].decode(0, as: String.self)
        // Jobs of a destination whose breaker is open start out held, as courier.enqueue's
        // do. A breaker that opens after this read cannot see these uncommitted rows; the
        // claim still skips their destination, they only stay in the runnable index.
        let held = Set(try tx.query("select destination from courier.breakers where state <> 'closed'").rows.map {
            try $0.decode(0, as: String.self)
        })
        var reported = 0
        let copied = try tx.copyIn("""
            copy courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url, headers,
                body, timeout_ms, expect_content_type, idempotency_key, signing_secret, held_since, traceparent, tracestate,
                fairness_key) from stdin
            """, producing: { emit in
                var keys = RandomUUIDs()
                var encoder = CopyRowEncoder(reservingCapacity: 260 * 1024)
                var encoded = 0
                for request in requests {
                    let destination: String
                    do throws(ValidationError) {
                        destination = try request.resolvedDestination()
                    } catch {
                        throw PostgresError(kind: .invalidArgument, message: "\(error.field): \(error.message)")
                    }
                    encodeDirectRow(request, destination: destination, now: now, held: held.contains(destination),
                                    keys: &keys, into: &encoder)
                    encoded += 1
                    // A chunk ends at every chunkSize rows (for progress) or at 256 KiB.
                    if encoded % chunkSize == 0 || encoder.bytes.count >= 256 * 1024 {
                        guard emit(encoder) else { return }
                        encoder.removeAll()
                    }
                }
                if encoder.rowCount > 0 { _ = emit(encoder) }
            }, sent: { rows in
                if rows / chunkSize > reported / chunkSize || rows == requests.count {
                    progress?(rows)
                }
                reported = rows
            })
        return copied
    }

    /// The staging path: rows with unique keys, whose rule (skip a key a waiting or
    /// running job holds) is applied in SQL.
    static func enqueueStaged(_ requests: [EnqueueRequest], on tx: PostgresConnection, chunkSize: Int,
                              progress: ((Int) -> Void)?) throws -> BulkResult {
        try tx.simpleQuery("""
            create temp table if not exists courier_enqueue_stage (
                ord bigint, url text, method text, headers jsonb, body text, queue text, priority int,
                run_at timestamptz, max_attempts int, deadline timestamptz, idempotency_key text,
                unique_key text, destination text, timeout_ms int, expect_content_type text, signing_secret text,
                traceparent text, tracestate text, fairness_key text
            ) on commit delete rows
            """)
        var keys = RandomUUIDs()
        var loaded = 0
        var start = 0
        while start < requests.count {
            let end = min(start + chunkSize, requests.count)
            // Destinations derived here, as on the direct path: `courier.destination_of` runs
            // through the function executor per row and was half of the INSERT's time.
            let rows = try requests[start..<end].enumerated().map { offset, request throws in
                let destination: String
                do throws(ValidationError) {
                    destination = try request.resolvedDestination()
                } catch {
                    throw PostgresError(kind: .invalidArgument, message: "\(error.field): \(error.message)")
                }
                return Self.stageRow(request, ordinal: start + offset, destination: destination, keys: &keys)
            }
            loaded += try tx.copyFrom("""
                copy courier_enqueue_stage (ord, url, method, headers, body, queue, priority, run_at, max_attempts,
                    deadline, idempotency_key, unique_key, destination, timeout_ms, expect_content_type, signing_secret,
                    traceparent, tracestate, fairness_key) from stdin
                """, rows: rows)
            progress?(loaded)
            start = end
        }
        let inserted = try tx.execute("""
            insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, unique_scope, signing_secret,
                held_since, traceparent, tracestate, fairness_key)
            select s.queue, s.priority, coalesce(s.run_at, now()), s.max_attempts, s.deadline, s.destination,
                s.method, s.url, s.headers, s.body, s.timeout_ms, s.expect_content_type, s.idempotency_key,
                -- Keys are unique per enqueuing role (sql/0021), as in courier.enqueue.
                s.unique_key, case when s.unique_key is not null then session_user::text end, s.signing_secret,
                -- Jobs for a destination whose breaker is open start out held.
                case when held.destination is not null then now() end,
                s.traceparent, s.tracestate, s.fairness_key
            from courier_enqueue_stage s
            left join (select destination from courier.breakers where state <> 'closed') held
                on held.destination = s.destination
            -- A row whose unique key another job of this role holds is skipped by the
            -- jobs_unique_key trigger (sql/0048), as `on conflict do nothing` did.
            order by s.ord
            """)
        try tx.simpleQuery("truncate courier_enqueue_stage")
        return BulkResult(inserted: inserted, skippedByUniqueKey: requests.count - inserted)
    }

    /// One COPY row for `courier.jobs` itself (the direct path), in the column order of
    /// `enqueueDirect`'s COPY statement.
    static func encodeDirectRow(_ request: EnqueueRequest, destination: String, now: String, held: Bool,
                                keys: inout RandomUUIDs, into encoder: inout CopyRowEncoder) {
        encoder.append(request.queue)
        encoder.append(request.priority)
        encoder.append(request.runAt?.postgresText ?? now)
        encoder.append(request.maxAttempts)
        encoder.append(request.deadline?.postgresText)
        encoder.append(destination)
        encoder.append(request.method.asciiUppercased)
        encoder.append(request.url)
        encoder.append(request.headersJSON)
        encoder.append(request.body)
        encoder.append(request.timeoutMilliseconds)
        encoder.append(request.expectContentType?.asciiLowercased)
        switch request.idempotencyKey {
        case .generated: keys.withNext { encoder.appendVerbatim($0) }
        case .custom(let key): encoder.append(key)
        case .none: encoder.append(nil)
        }
        encoder.append(request.signingSecret)
        encoder.append(held ? now : nil)
        encoder.append(request.traceparent)
        encoder.append(request.tracestate)
        encoder.append(request.fairnessKey)
        encoder.endRow()
    }

    static func stageRow(_ request: EnqueueRequest, ordinal: Int, destination: String, keys: inout RandomUUIDs) -> [String?] {
        let key: String? = switch request.idempotencyKey {
        case .generated: keys.next()
        case .custom(let key): key
        case .none: nil
        }
        return [
            String(ordinal), request.url, request.method.asciiUppercased, request.headersJSON, request.body, request.queue,
            String(request.priority), request.runAt?.postgresText, String(request.maxAttempts),
            request.deadline?.postgresText, key, request.uniqueKey, destination,
            String(request.timeoutMilliseconds), request.expectContentType?.asciiLowercased, request.signingSecret,
            request.traceparent, request.tracestate, request.fairnessKey,
        ]
    }
}
