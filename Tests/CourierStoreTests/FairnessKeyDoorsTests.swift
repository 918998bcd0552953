import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 42: a job's fairness key through every door (courier.enqueue, courier.enqueue_job, a
/// plain INSERT, the Swift API and its COPY and staged bulk paths, NDJSON, schedules), one rule
/// in SQL and in Swift, and the key kept by dead letters and replays.
@Suite struct FairnessKeyDoorsTests {
    func key(_ id: Int64, on db: PostgresConnection) throws -> String? {
        try db.query("select fairness_key::text from courier.jobs where id = \(id)").rows[0].decode(0, as: String?.self)
    }

    func failure(_ body: () throws -> Void) -> PostgresError? {
        do { try body() } catch let error as PostgresError { return error } catch { return nil }
        return nil
    }

    static let samples = ["tenant-42", "a", "x@y.example/z:1", String(repeating: "k", count: 128), String(repeating: "k", count: 129),
                          "", "has space", "tab\there", "ünï", "~!#$%&*+=?^_`{|}"]

    /// One list of values, judged alike by `courier.is_fairness_key` and by Swift.
    @Test func sqlAndSwiftAgreeOnEveryKey() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for text in Self.samples {
                let sql = try db.query("select coalesce(courier.is_fairness_key(\(text)), false)").rows[0].decode(0, as: Bool.self)
                #expect(sql == FairnessKey.isValid(text), "\(text)")
            }
            let rule = try db.query("select courier.fairness_key_rule()").rows[0].decode(0, as: String.self)
            #expect(rule == FairnessKey.rule)
        }
    }

    @Test func everyDoorTakesTheKey() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let bySQL = try db.query("select courier.enqueue(url => 'https://example.com/a', fairness_key => 't-sql')")
                .rows[0].decode(0, as: Int64.self)
            #expect(try key(bySQL, on: db) == "t-sql")
            let byHandler = try db.query("select courier.enqueue_job(kind => 'report', fairness_key => 't-job')")
                .rows[0].decode(0, as: Int64.self)
            #expect(try key(byHandler, on: db) == "t-job")
            let byInsert = try db.query("""
                insert into courier.jobs (destination, url, fairness_key) values ('https://example.com:443', 'https://example.com/i', 't-insert')
                returning id
                """).rows[0].decode(0, as: Int64.self)
            #expect(try key(byInsert, on: db) == "t-insert")
            var request = EnqueueRequest(url: "https://example.com/swift")
            request.fairnessKey = "t-swift"
            #expect(try key(try JobsTable.enqueue(request, on: db), on: db) == "t-swift")
            let none = try JobsTable.enqueue(EnqueueRequest(url: "https://example.com/none"), on: db)
            #expect(try key(none, on: db) == nil, "no key: the default key, stored as NULL")
            // Bulk: the COPY path and the staged path (unique keys).
            let line = try EnqueueRequest(jsonLine: #"{"url": "https://example.com/n", "fairness_key": "t-ndjson"}"#)
            var unique = line
            unique.uniqueKey = "u1"
            _ = try JobsTable.enqueueMany([line], on: db)
            _ = try JobsTable.enqueueMany([unique], on: db)
            let bulk = try db.query("select count(*)::bigint from courier.jobs where fairness_key = 't-ndjson'").rows[0].decode(0, as: Int.self)
            #expect(bulk == 2, "both bulk paths keep the key")
        }
    }

    @Test func badKeysAreRefusedNamingTheField() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let sql = failure { _ = try db.query("select courier.enqueue(url => 'https://example.com/a', fairness_key => 'a b')") }
            #expect(sql?.sqlState == "22023" && sql?.columnName == "fairness_key", "\(String(describing: sql))")
            let job = failure { _ = try db.query("select courier.enqueue_job(kind => 'report', fairness_key => '')") }
            #expect(job?.sqlState == "22023" && job?.columnName == "fairness_key", "\(String(describing: job))")
            let insert = failure {
                try db.execute("insert into courier.jobs (destination, url, fairness_key) values ('x', 'https://example.com/i', 'a b')")
            }
            #expect(insert?.sqlState == "23514", "the domain's check holds for a plain INSERT: \(String(describing: insert))")
            var request = EnqueueRequest(url: "https://example.com/swift")
            request.fairnessKey = String(repeating: "k", count: 129)
            #expect(throws: ValidationError(field: "fairness_key", message: FairnessKey.rule)) { try request.validate() }
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0,
                    "nothing was enqueued")
        }
    }

    /// A dead letter keeps the key, and its replay carries it on.
    @Test func deadLettersAndReplaysKeepTheKey() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var request = EnqueueRequest(url: "https://example.com/dead")
            request.fairnessKey = "t-dead"
            let id = try JobsTable.enqueue(request, on: db)
            let worker = UUID()
            let claimed = try JobsTable.claimFair(queue: "default", limit: 1, cursor: .start, quantum: 4, visit: 64, worker: worker,
                                                  leaseMilliseconds: 30_000, on: db).jobs
            #expect(claimed.map(\.id) == [id])
            _ = try JobsTable.deadLetter(claimed.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, reason: .permanent,
                                                             errorJSON: nil, lastClass: nil, lastStatus: nil) },
                                         worker: worker, on: db)
            let letter = try db.query("select fairness_key from courier.dead_letters where job_id = \(id)").rows[0].decode(0, as: String?.self)
            #expect(letter == "t-dead")
            let replayed = try db.query("select new_job_id from courier.replay_dead_letters()").rows[0].decode(0, as: Int64.self)
            #expect(try key(replayed, on: db) == "t-dead")
        }
    }

    /// A schedule's job may name a key, HTTP or handler; each run carries it.
    @Test func schedulesCarryTheKeyToEachRun() throws {
        let http = try ScheduleTemplate(json: #"{"url": "https://example.com/s", "fairness_key": "t-cron"}"#)
        guard case .http(let request) = http.job else { Issue.record("not an HTTP job"); return }
        #expect(request.fairnessKey == "t-cron")
        #expect(try ScheduleTemplate(json: http.json) == http, "the stored template keeps the key")
        let handler = try ScheduleTemplate(json: #"{"kind": "report", "fairness_key": "t-handler"}"#)
        guard case .handler(let job) = handler.job else { Issue.record("not a handler job"); return }
        #expect(job.fairnessKey == "t-handler")
        #expect(throws: ValidationError.self) { try ScheduleTemplate(json: #"{"kind": "report", "fairness_key": "a b"}"#) }
        try CourierTestDatabase.with { (_, db) throws in
            let a = try http.enqueue(schedule: "s", slot: Date(timeIntervalSince1970: 1_800_000_000), on: db)
            let b = try handler.enqueue(schedule: "h", slot: Date(timeIntervalSince1970: 1_800_000_000), on: db)
            #expect(try key(a, on: db) == "t-cron")
            #expect(try key(b, on: db) == "t-handler")
        }
    }
}
