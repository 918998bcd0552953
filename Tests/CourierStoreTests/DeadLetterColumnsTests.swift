@testable import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// A dead letter keeps the job's request as it was, whichever path wrote it: the Swift
/// statements (`DeadLettersTable.insertFromJobs`) and the acknowledgement functions of
/// migration 0034, which spell the same insert in SQL. The columns compared are read from
/// the catalog (every column both tables have, less those a dead letter records anew), so
/// a column added to both tables and forgotten by one path fails here.
@Suite(.serialized) struct DeadLetterColumnsTests {
    let worker = UUID()

    /// Columns both tables have whose values a dead letter writes itself.
    static let recordedAnew: Set<String> = ["id", "attempt", "errors"]

    func keptColumns(on db: PostgresConnection) throws -> [String] {
        try db.query("""
            select j.column_name::text from information_schema.columns j
            join information_schema.columns d
              on d.table_schema = 'courier' and d.table_name = 'dead_letters' and d.column_name = j.column_name
            where j.table_schema = 'courier' and j.table_name = 'jobs'
            order by j.column_name
            """).rows.map { try $0.decode(0, as: String.self) }.filter { !Self.recordedAnew.contains($0) }
    }

    /// A running job, leased to `worker` for attempt 1 of 1, with every kept column set
    /// to something other than its default. Returns its id.
    func runningJob(on db: PostgresConnection) throws -> Int64 {
        try db.query(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (kind, queue, priority, destination, method, url, headers, body, timeout_ms,
                                      expect_content_type, idempotency_key, unique_key, unique_scope, args, max_attempts,
                                      deadline, created_at, signing_secret,
                                      state, attempt, lease_seq, leased_by, lease_expires_at, attempted_at)
            values ('http', 'kept', 7, 'http://plain.test:80', 'PATCH', 'http://plain.test/kept', '{"X-Kept": "1"}', 'body',
                    1234, 'application/json', 'key-' || gen_random_uuid(), 'unique-' || gen_random_uuid(), '', '{"a": 1}', 1,
                    now() + interval '1 day', now() - interval '1 hour', 'kept-secret',
                    'running', 1, 1, $1::uuid, now() + interval '1 hour', now())
            returning id
            """, binds: [worker])).rows[0].decode(0, as: Int64.self)
    }

    /// The kept columns of job `id` as JSON text, one entry per column.
    func jobColumns(_ id: Int64, _ columns: [String], on db: PostgresConnection) throws -> [String: String] {
        try columnsOf("select to_jsonb(j) from courier.jobs j where j.id = $1", id, columns, on: db)
    }

    func deadLetterColumns(_ id: Int64, _ columns: [String], on db: PostgresConnection) throws -> [String: String] {
        try columnsOf("select to_jsonb(d) from courier.dead_letters d where d.job_id = $1", id, columns, on: db)
    }

    func columnsOf(_ sql: String, _ id: Int64, _ columns: [String], on db: PostgresConnection) throws -> [String: String] {
        let rows = try db.query(PostgresQuery(unsafeSQL: "select key, value::text from jsonb_each((\(sql)))",
                                              binds: [id])).rows
        var values: [String: String] = [:]
        for row in rows {
            let key = try row.decode(0, as: String.self)
            if columns.contains(key) { values[key] = try row.decode(1, as: String.self) }
        }
        return values
    }

    @Test func everyPathThatDeadLettersAJobKeepsItsRequest() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let columns = try keptColumns(on: db)
            #expect(columns.count >= 17, "kept columns: \(columns)")
            let paths: [(String, (Int64) throws -> Void)] = [
                ("dead letter", { id in
                    try JobsTable.deadLetter([.init(id: id, attempt: 1, lease: 1, reason: .permanent, errorJSON: #"{"class":"client"}"#,
                                                    lastClass: .client, lastStatus: 404)], worker: worker, on: db)
                }),
                ("retry of a cancelled job", { id in
                    try TestRows(db).requestCancel(.id(id))
                    try JobsTable.retry([.init(id: id, attempt: 1, lease: 1, delayMilliseconds: 1000, errorJSON: #"{"class":"timeout"}"#)],
                                        worker: worker, on: db)
                }),
                ("rescue", { id in
                    _ = try JobsTable.rescueExpired(now: Date().addingTimeInterval(7200), on: db)
                }),
                ("cancel", { id in
                    try db.execute(PostgresQuery(unsafeSQL: """
                        update courier.jobs set state = 'available', leased_by = null, lease_expires_at = null where id = $1
                        """, binds: [id]))
                    _ = try JobsTable.cancel(ids: [id], on: db)
                }),
            ]
            for (name, deadLetter) in paths {
                let id = try runningJob(on: db)
                let before = try jobColumns(id, columns, on: db)
                #expect(before.count == columns.count)
                try deadLetter(id)
                let after = try deadLetterColumns(id, columns, on: db)
                #expect(!after.isEmpty, "\(name): no dead letter")
                for column in columns where after[column] != before[column] {
                    Issue.record("\(name): \(column) was \(before[column] ?? "absent"), the dead letter has \(after[column] ?? "absent")")
                }
            }
        }
    }
}
