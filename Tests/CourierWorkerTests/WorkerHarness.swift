import CourierCore
import CourierHTTP
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres
import Testing

/// Runs an in-process worker against a test database and loopback fault server.
final class WorkerHarness: @unchecked Sendable {
    let database: TestDatabase
    let db: PostgresConnection
    let server: FaultServer
    private(set) var worker: Worker!
    private var runTask: Task<Void, Never>?
    private var transport: CurlTransport?
    let logLines = LogCapture()

    /// Runs `body` with a harness and always shuts it down afterwards, even when
    /// `body` throws: a failing test cannot leak a running worker.
    static func with<T>(label: String = #function, defaultBehavior: FaultServer.Behavior = .json200,
                        _ body: (WorkerHarness) async throws -> T) async throws -> T {
        let harness = try WorkerHarness(label: label, defaultBehavior: defaultBehavior)
        do {
            let result = try await body(harness)
            await harness.close()
            return result
        } catch {
            await harness.close()
            throw error
        }
    }

    init(label: String = #function, defaultBehavior: FaultServer.Behavior = .json200) throws {
        database = try CourierTestDatabase.create(label: label)
        db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        server = try FaultServer(defaultBehavior: defaultBehavior)
    }

    /// The worker's secrets: PARTNER_TOKEN, bound to the fault server only.
    lazy var secretEnvironment: [String: String] = [
        "COURIER_SECRET_PARTNER_TOKEN": "s3cr3t", "COURIER_SECRET_PARTNER_TOKEN_DESTINATIONS": server.baseURL,
    ]
    /// The worker's `--secrets-dir`; none unless a test sets one.
    var secretsDirectory: String?

    /// Starts a worker with fast test timings; `configure` may change anything. Its transport
    /// opens at most `maxHostConnections` connections to one host (libcurl queues the rest).
    func start(allowPrivateNetworks: Bool = true, maxHostConnections: Int = 128,
               _ configure: (inout WorkerConfiguration) -> Void = { _ in },
               register: (Worker) -> Void = { _ in }) throws {
        var configuration = WorkerConfiguration(database: PostgresConfiguration(connectionString: database.url))
        configuration.concurrency = 8
        configuration.lease = .seconds(5)
        configuration.shutdownGrace = .seconds(5)
        configuration.pollInterval = .milliseconds(200)
        configuration.retryPolicy.backoff.base = .milliseconds(50)
        configuration.retryPolicy.backoff.cap = .milliseconds(200)
        configuration.retryPolicy.backoff.jitter = .none
        configuration.allowPrivateNetworks = allowPrivateNetworks
        configure(&configuration)
        let transport = try CurlTransport(configuration: .init(
            allowPrivateNetworks: configuration.allowPrivateNetworks,
            addressGuard: { AddressPolicy.refusalCategory(ip: $0) }, maxHostConnections: maxHostConnections))
        self.transport = transport
        let worker = Worker(
            configuration: configuration,
            httpHandler: HTTPJobHandler(transport: transport, secrets: SecretResolver(environment: secretEnvironment, directory: secretsDirectory)),
            logger: Logger(level: .debug, sink: { [logLines] in logLines.append($0) }))
        register(worker)
        self.worker = worker
        runTask = Task.detached { await worker.run() }
    }

    /// Shuts the worker down gracefully and waits for `run` to return.
    func stop() async {
        worker?.shutdown()
        await runTask?.value
        runTask = nil
        transport?.shutdown()
    }

    func close() async {
        await stop()
        server.stop()
        db.close()
        try? database.drop()
    }

    @discardableResult
    func enqueue(_ path: String, _ configure: (inout EnqueueRequest) -> Void = { _ in }) throws -> Int64 {
        try TestRows(db).job(url: server.baseURL + path, configure)
    }

    func job(_ id: Int64) throws -> JobRecord? { try JobsTable.get(id: id, on: db) }

    /// Whether job `id` went back to the queue without using an attempt, not due for a while
    /// (the hand-back of a job the worker's configuration cannot run).
    func isHandedBack(_ id: Int64) throws -> Bool {
        try db.query("""
            select count(*)::int from courier.jobs
            where id = \(id) and state = 'available' and attempt = 0 and run_at > now() + interval '10 seconds'
            """).rows[0].decode(0, as: Int.self) == 1
    }

    /// Polls until `condition` holds (the shared helper in CourierTestSupport).
    func eventually(timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws -> Bool {
        try await CourierTestSupport.eventually(timeout: timeout, condition)
    }

    /// Waits until the fault server has recorded `count` requests (for `path`, if given).
    func waitForRequests(_ count: Int, path: String? = nil, timeout: Duration = .seconds(30)) async throws -> Bool {
        try await eventually(timeout: timeout) { self.server.requestCount(path: path) >= count }
    }

    func status(_ id: Int64) throws -> JobRecord.Status? { try job(id)?.status }

    func waitFor(_ id: Int64, _ status: JobRecord.Status, timeout: Duration = .seconds(30)) async throws -> JobRecord {
        let reached = try await eventually(timeout: timeout) { try self.status(id) == status }
        let record = try job(id)
        #expect(reached, "job \(id) should become \(status), is \(String(describing: record?.status)) \(record?.errors.map(\.message) ?? [])")
        return try #require(record)
    }
}

final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
