import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// What one in-process `jobctl` run did.
struct JobctlOutcome: CustomStringConvertible {
    var status: Int32
    var out: String
    var err: String

    /// Standard output parsed as JSON.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(out.utf8))
    }

    /// Standard output parsed as a JSON object.
    func object() throws -> [String: Any] {
        try #require(try json() as? [String: Any], "not a JSON object: \(out)")
    }

    /// Standard output parsed as a JSON array of objects.
    func array() throws -> [[String: Any]] {
        try #require(try json() as? [[String: Any]], "not a JSON array of objects: \(out)")
    }

    var description: String { "exit \(status)\nstdout: \(out)\nstderr: \(err)" }
}

/// Collects what a run writes; written from the running thread only, read after.
final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func append(_ s: String) { lock.withLock { text += s } }
    var value: String { lock.withLock { text } }
}

/// Runs `jobctl` exactly as the executable does, with captured streams.
/// `databaseURL` nil leaves `--database-url` out (for tests of the environment).
func jobctl(_ arguments: [String], databaseURL: String?, stdin: Data = Data(), terminal: Bool = false,
            environment: [String: String] = [:]) -> JobctlOutcome {
    let out = OutputBuffer()
    let err = OutputBuffer()
    let io = ControlIO(environment: environment, writeOut: { out.append($0) }, writeErr: { err.append($0) },
                       readStandardInput: { stdin }, isTerminal: terminal)
    let status = Jobctl.run((databaseURL.map { ["--database-url", $0] } ?? []) + arguments, io: io)
    return JobctlOutcome(status: status, out: out.value, err: err.value)
}

/// A migrated database of its own for one test, with a connection for checks.
final class ControlFixture: @unchecked Sendable {
    let database: TestDatabase
    let db: PostgresConnection

    init(label: String = #function) throws {
        database = try CourierTestDatabase.create(label: label)
        db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
    }

    /// Creates a fixture, runs `body`, and drops the database whatever happens.
    static func with<T>(label: String = #function, _ body: (ControlFixture) throws -> T) throws -> T {
        let fixture = try ControlFixture(label: label)
        defer { fixture.close() }
        return try body(fixture)
    }

    func close() {
        db.close()
        try? database.drop()
    }

    /// Runs `jobctl` against this fixture's database.
    func run(_ arguments: [String], stdin: Data = Data(), terminal: Bool = false) -> JobctlOutcome {
        jobctl(arguments, databaseURL: database.url, stdin: stdin, terminal: terminal)
    }

    /// A single integer from `sql` (e.g. a count).
    func int(_ query: PostgresQuery) throws -> Int {
        try db.query(query).rows[0].decode(0, as: Int.self)
    }

    var jobCount: Int { get throws { try int("select count(*)::bigint from courier.jobs") } }
    var deadLetterCount: Int { get throws { try int("select count(*)::bigint from courier.dead_letters") } }

    /// Enqueues through the store, for tests that need jobs but do not test enqueue.
    @discardableResult
    func enqueue(_ url: String = "http://example.com/hook", _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> Int64 {
        try TestRows(db).job(url: url, configure)
    }

    /// A dead letter written through TestRows, with every field a filter can look at; returns its id.
    @discardableResult
    func deadLetter(reason: String = "exhausted", destination: String = "https://api.example.com:443",
                    queue: String = "default", lastClass: String? = "server", lastStatus: Int? = 500,
                    failedAgo seconds: Double = 60, url: String? = nil, key: String? = nil, attempt: Int = 2,
                    deadline: Date? = nil, createdAgo: Double? = nil, replayed: Bool = false) throws -> Int64 {
        let history = """
            [{"attempt": 1, "class": "\(lastClass ?? "server")", "status": \(lastStatus.map(String.init) ?? "null"), "message": "first"},
             {"attempt": 2, "class": "\(lastClass ?? "server")", "status": \(lastStatus.map(String.init) ?? "null"), "message": "second"}]
            """
        return try TestRows(db).deadLetters(1) { d in
            d.reason = reason
            d.queue = queue
            d.destination = destination
            d.url = url ?? destination + "/hook"
            d.headers = #"{"Content-Type": "application/json"}"#
            d.body = #"{"n": 1}"#
            d.idempotencyKey = key ?? UUID().uuidString
            d.maxAttempts = 5
            d.deadline = deadline
            d.attempt = attempt
            d.errors = history
            d.lastClass = lastClass
            d.lastStatus = lastStatus
            d.worker = "test-worker"
            d.createdAgo = .seconds(createdAgo ?? seconds + 10)
            d.failedAgo = .seconds(seconds)
            d.replayedAgo = replayed ? .seconds(1) : nil
        }[0].id
    }

    /// The dead letters' ids with `replayed_at` set.
    func replayedIDs() throws -> Set<Int64> {
        Set(try db.query("select id from courier.dead_letters where replayed_at is not null").rows.map { try $0.decode(0, as: Int64.self) })
    }
}

/// A temporary file removed when the value goes away.
final class TemporaryFile {
    let path: String

    init(_ contents: Data, suffix: String = ".txt") throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-ctl-\(UUID().uuidString)\(suffix)").path
        guard FileManager.default.createFile(atPath: path, contents: contents) else {
            throw TemporaryFileError(path: path)
        }
    }

    convenience init(_ text: String, suffix: String = ".txt") throws {
        try self.init(Data(text.utf8), suffix: suffix)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

struct TemporaryFileError: Error, CustomStringConvertible {
    var path: String
    var description: String { "cannot create \(path)" }
}

/// A URL nothing listens on, so connecting fails at once.
let unreachableDatabaseURL = "postgresql://courier@127.0.0.1:1/courier?connect_timeout=5"
