import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl enqueue` with flags: every flag lands in its column; bad flags name
/// themselves, exit 2 and enqueue nothing.
@Suite("jobctl enqueue")
struct EnqueueCommandTests {
    struct StoredJob {
        var method: String
        var headers: [String: String]
        var body: String?
        var queue: String
        var priority: Int
        var runAfterCreate: Double
        var runAt: Date
        var maxAttempts: Int
        var deadline: Date?
        var deadlineAfterCreate: Double?
        var idempotencyKey: String?
        var uniqueKey: String?
        var destination: String
        var timeoutMilliseconds: Int
        var expectContentType: String?
    }

    func stored(_ id: Int64, in fixture: ControlFixture) throws -> StoredJob {
        let row = try #require(try fixture.db.query("""
            select method, headers::text, body, queue, priority, extract(epoch from run_at - created_at)::float8, run_at,
                   max_attempts, deadline, extract(epoch from deadline - created_at)::float8, idempotency_key, unique_key,
                   destination, timeout_ms, expect_content_type
            from courier.jobs where id = \(id)
            """).rows.first, "job \(id) is not in courier.jobs")
        let headers = try JSONSerialization.jsonObject(with: Data(try row.decode(1, as: String.self).utf8)) as? [String: String]
        return StoredJob(
            method: try row.decode(0, as: String.self), headers: headers ?? [:], body: try row.decode(2, as: String?.self),
            queue: try row.decode(3, as: String.self), priority: try row.decode(4, as: Int.self),
            runAfterCreate: try row.decode(5, as: Double.self), runAt: try row.decode(6, as: Date.self),
            maxAttempts: try row.decode(7, as: Int.self), deadline: try row.decode(8, as: Date?.self),
            deadlineAfterCreate: try row.decode(9, as: Double?.self), idempotencyKey: try row.decode(10, as: String?.self),
            uniqueKey: try row.decode(11, as: String?.self), destination: try row.decode(12, as: String.self),
            timeoutMilliseconds: try row.decode(13, as: Int.self), expectContentType: try row.decode(14, as: String?.self))
    }

    /// Runs an enqueue that must succeed and returns the printed id.
    func enqueued(_ arguments: [String], in fixture: ControlFixture, stdin: Data = Data()) throws -> Int64 {
        let result = fixture.run(["enqueue"] + arguments, stdin: stdin)
        #expect(result.status == 0, "\(result)")
        #expect(result.err.isEmpty, "\(result)")
        return try #require(Int64(result.out.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result)")
    }

    @Test func everyFlagLandsInItsColumn() throws {
        try ControlFixture.with { fixture throws in
            let id = try enqueued([
                "--url", "https://api.example.com/hooks/1", "--method", "put",
                "--header", "Content-Type: application/json", "-H", "X-Trace:  abc ",
                "--data", #"{"event":"signup"}"#, "--queue", "mail", "--priority", "-7",
                "--run-at", "2031-02-03T04:05:06Z", "--max-attempts", "9", "--deadline", "2031-02-04T00:00:00Z",
                "--idempotency-key", "key-1", "--unique-key", "unique-1", "--destination", "partner-a",
                "--timeout", "2500ms", "--expect-content-type", "Application/JSON",
            ], in: fixture)
            let job = try stored(id, in: fixture)
            #expect(job.method == "PUT")
            #expect(job.headers == ["Content-Type": "application/json", "X-Trace": "abc"])
            #expect(job.body == #"{"event":"signup"}"#)
            #expect(job.queue == "mail")
            #expect(job.priority == -7)
            #expect(job.runAt == Date(timeIntervalSince1970: 1_927_857_906))
            #expect(job.maxAttempts == 9)
            #expect(job.deadline == Date(timeIntervalSince1970: 1_927_929_600))
            #expect(job.idempotencyKey == "key-1")
            #expect(job.uniqueKey == "unique-1")
            #expect(job.destination == "partner-a")
            #expect(job.timeoutMilliseconds == 2500)
            #expect(job.expectContentType == "application/json")
        }
    }

    @Test func defaultsMatchTheContract() throws {
        try ControlFixture.with { fixture throws in
            let id = try enqueued(["--url", "http://Example.com/x"], in: fixture)
            let job = try stored(id, in: fixture)
            #expect(job.method == "POST")
            #expect(job.headers.isEmpty)
            #expect(job.body == nil)
            #expect(job.queue == "default")
            #expect(job.priority == 0)
            #expect(abs(job.runAfterCreate) < 5)
            #expect(job.maxAttempts == JobDefaults.maxAttempts)
            #expect(job.deadline == nil)
            #expect(job.uniqueKey == nil)
            #expect(job.destination == "http://example.com:80")
            #expect(job.timeoutMilliseconds == 30_000)
            #expect(job.expectContentType == nil)
            let key = try #require(job.idempotencyKey, "a key is generated when none is given")
            #expect(UUID(uuidString: key) != nil)
            let other = try stored(try enqueued(["--url", "http://example.com/x"], in: fixture), in: fixture)
            #expect(other.idempotencyKey != key, "each job gets its own key")
        }
    }

    @Test func relativeStartAndDeadline() throws {
        try ControlFixture.with { fixture throws in
            let job = try stored(try enqueued(["--url", "http://example.com/x", "--in", "5m", "--within", "2h"], in: fixture), in: fixture)
            // jobctl's clock and the database's are the same machine's; the slack only absorbs the run's own duration.
            #expect((290...310).contains(job.runAfterCreate), "run_at - created_at = \(job.runAfterCreate)")
            #expect((7190...7210).contains(job.deadlineAfterCreate ?? 0), "deadline - created_at = \(String(describing: job.deadlineAfterCreate))")
            let offset = try stored(try enqueued(["--url", "http://example.com/x", "--run-at", "+90s"], in: fixture), in: fixture)
            #expect((80...100).contains(offset.runAfterCreate))
        }
    }

    @Test func bodyFromFileAndStandardInput() throws {
        try ControlFixture.with { fixture throws in
            let file = try TemporaryFile("{\"from\": \"file\"}\n", suffix: ".json")
            let fromFile = try stored(try enqueued(["--url", "http://example.com/x", "--data", "@" + file.path], in: fixture), in: fixture)
            #expect(fromFile.body == "{\"from\": \"file\"}\n")
            let fromStdin = try stored(try enqueued(["--url", "http://example.com/x", "-d", "@-"], in: fixture,
                                                    stdin: Data("piped body".utf8)), in: fixture)
            #expect(fromStdin.body == "piped body")
        }
    }

    @Test func noIdempotencyKeyIsStoredAsNull() throws {
        try ControlFixture.with { fixture throws in
            let job = try stored(try enqueued(["--url", "http://example.com/x", "--no-idempotency-key"], in: fixture), in: fixture)
            #expect(job.idempotencyKey == nil)
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where idempotency_key is null") == 1)
        }
    }

    @Test func uniqueKeyReturnsTheWaitingJobsID() throws {
        try ControlFixture.with { fixture throws in
            let first = try enqueued(["--url", "http://example.com/a", "--unique-key", "sync-42"], in: fixture)
            let second = try enqueued(["--url", "http://example.com/b", "--unique-key", "sync-42"], in: fixture)
            #expect(first == second)
            #expect(try fixture.jobCount == 1)
            let json = fixture.run(["enqueue", "--url", "http://example.com/c", "--unique-key", "sync-42", "--json"])
            #expect(json.status == 0)
            #expect((try json.object()["id"] as? NSNumber)?.int64Value == first)
        }
    }

    @Test func jsonPrintsTheID() throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(["enqueue", "--url", "http://example.com/x", "--json"])
            #expect(result.status == 0, "\(result)")
            let id = try #require((try result.object()["id"] as? NSNumber)?.int64Value)
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id = \(id)") == 1)
        }
    }

    @Test(arguments: [
        (["--url", "ftp://example.com/x"], "--url"),
        (["--url", "not a url"], "--url"),
        (["--url", "http://example.com/x", "--priority", "abc"], "--priority"),
        (["--url", "http://example.com/x", "--priority", "40000"], "--priority"),
        (["--url", "http://example.com/x", "--max-attempts", "0"], "--max-attempts"),
        (["--url", "http://example.com/x", "--max-attempts", "1001"], "--max-attempts"),
        (["--url", "http://example.com/x", "--timeout", "2x"], "--timeout"),
        (["--url", "http://example.com/x", "--timeout", "2h"], "--timeout"),
        (["--url", "http://example.com/x", "--header", "NoColonHere"], "--header"),
        (["--url", "http://example.com/x", "--header", "Bad Name: v"], "--header"),
        (["--url", "http://example.com/x", "--header", "X-A: 1", "--header", "x-a: 2"], "--header"),
        (["--url", "http://example.com/x", "--run-at", "now", "--in", "5m"], "--in"),
        (["--url", "http://example.com/x", "--run-at", "tomorrowish"], "--run-at"),
        (["--url", "http://example.com/x", "--in", "soon"], "--in"),
        (["--url", "http://example.com/x", "--deadline", "2001-01-01T00:00:00Z"], "--deadline"),
        (["--url", "http://example.com/x", "--in", "2h", "--deadline", "+1h"], "--deadline"),
        (["--url", "http://example.com/x", "--within", "1h", "--deadline", "+2h"], "--deadline"),
        (["--url", "http://example.com/x", "--queue", "no spaces"], "--queue"),
        (["--url", "http://example.com/x", "--method", "GE T"], "--method"),
        (["--url", "http://example.com/x", "--expect-content-type", "json"], "--expect-content-type"),
        (["--url", "http://example.com/x", "--data", "@/nonexistent/courier-body"], "--data"),
        (["--url", "http://example.com/x", "--idempotency-key", "k", "--no-idempotency-key"], "--no-idempotency-key"),
        (["--url", "http://example.com/x", "--colour", "red"], "--colour"),
        (["--method", "GET"], "--url"),
    ])
    func badFlagsExit2NameTheFlagAndEnqueueNothing(_ arguments: [String], _ flag: String) throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(["enqueue"] + arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains(flag), "the message should name \(flag): \(result.err)")
            #expect(result.out.isEmpty)
            #expect(try fixture.jobCount == 0)
        }
    }

    @Test func unreachableDatabaseExits1() {
        let result = jobctl(["enqueue", "--url", "http://example.com/x"], databaseURL: unreachableDatabaseURL)
        #expect(result.status == 1, "\(result)")
        #expect(result.err.contains("cannot connect to the database"), "\(result)")
        #expect(result.out.isEmpty)
    }

    @Test func databaseURLFromTheEnvironment() throws {
        try ControlFixture.with { fixture throws in
            let result = jobctl(["enqueue", "--url", "http://example.com/x"], databaseURL: nil,
                                environment: ["DATABASE_URL": fixture.database.url])
            #expect(result.status == 0, "\(result)")
            #expect(try fixture.jobCount == 1)
        }
    }

    @Test func secretHeaderValuesAreNotEchoedInErrors() throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(["enqueue", "--url", "http://example.com/x", "--header", "Authorization Bearer s3cr3t"])
            #expect(result.status == 2)
            #expect(!result.err.contains("s3cr3t"), "\(result.err)")
        }
    }
}
