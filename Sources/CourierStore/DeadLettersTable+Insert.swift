import Postgres

extension DeadLettersTable {
    /// The job columns a dead letter keeps as they were: the request and its history.
    /// Both tables name them alike, so the list is both the insert's and the select's.
    static let keptJobColumns = """
        kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type, \
        idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, \
        fairness_key
        """

    /// The one statement that records dead letters: `insert into courier.dead_letters`
    /// from rows of `source` (a CTE holding deleted `courier.jobs` rows, `returning *`
    /// or `j.*` plus the caller's columns). The arguments are SQL expressions over those
    /// rows, written in this module (never values: those are bound by the caller's CTEs).
    /// A DBA reads it as:
    ///
    ///     insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker, kind, ...)
    ///     select id, <reason>, <attempt>, <errors>, <lastClass>, <lastStatus>, <worker>, kind, ... from <source>
    ///     returning <returning>
    ///
    /// One fragment rather than a SQL function: every caller inserts a set of rows inside a
    /// larger data-modifying statement, which stays one round trip and one plan this way.
    /// The acknowledgement functions (`courier.retry_jobs`, `courier.dead_letter_jobs`,
    /// sql/schema/jobs.sql) spell the same insert in SQL; `DeadLetterColumnsTests`
    /// checks that every path, here or there, keeps each column both tables share.
    static func insertFromJobs(source: StaticString, reason: StaticString, attempt: StaticString = "attempt",
                               errors: StaticString, lastClass: StaticString, lastStatus: StaticString = "null",
                               worker: StaticString = "null", returning: StaticString = "job_id") -> PostgresQuery {
        PostgresQuery(unsafeSQL: """
            insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
                \(keptJobColumns))
            select id, \(reason), \(attempt), \(errors), \(lastClass), \(lastStatus), \(worker),
                \(keptJobColumns)
            from \(source)
            returning \(returning)
            """)
    }
}
