import CourierCore
import CourierHTTP
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres
import Testing

/// Worker log lines: one per event, logfmt or JSON, every job line naming the job;
/// and no secret header value in any log line or stored attempt error.
@Suite(.serialized) struct WorkerLogTests {
    @Test func jsonLogLinesAreObjectsAndEveryJobLineNamesTheJob() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.respond(status: 404, headers: [], body: ""), forPath: "/gone")
            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "")], forPath: "/flaky")
            let lines = LogCapture()
            var configuration = WorkerConfiguration(database: PostgresConfiguration(connectionString: h.database.url))
            configuration.concurrency = 4
            configuration.pollInterval = .milliseconds(200)
            configuration.retryPolicy.backoff.base = .milliseconds(50)
            configuration.retryPolicy.backoff.cap = .milliseconds(100)
            configuration.allowPrivateNetworks = true
            configuration.shutdownGrace = .seconds(5)
            let transport = try CurlTransport(configuration: .init(allowPrivateNetworks: true))
            let worker = Worker(configuration: configuration,
                                httpHandler: HTTPJobHandler(transport: transport, secrets: SecretResolver(environment: [:], directory: nil)),
                                logger: Logger(format: .json, level: .debug, sink: { lines.append($0) }))
            let run = Task.detached { await worker.run() }
            let ok = try h.enqueue("/ok")
            let flaky = try h.enqueue("/flaky") { $0.queue = "default" }
            let gone = try h.enqueue("/gone")
            _ = try await h.waitFor(ok, .succeeded)
            _ = try await h.waitFor(flaky, .succeeded)
            _ = try await h.waitFor(gone, .dead)
            worker.shutdown()
            await run.value
            transport.shutdown()

            let objects = try lines.all.map { line -> [String: Any] in
                #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one line per event")
                return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            }
            for object in objects {
                #expect(object["time"] is String && object["msg"] is String)
                #expect(["debug", "info", "warn", "error"].contains(object["level"] as? String ?? ""))
            }
            let jobLines = objects.filter { $0["job"] != nil }
            #expect(jobLines.count >= 4, "a success per job at debug level, a retry and a dead letter")
            for line in jobLines {
                for field in ["job", "queue", "destination", "attempt", "class"] {
                    #expect(line[field] != nil, "job line \(line["msg"] ?? "") lacks \(field)")
                }
            }
            let dead = try #require(jobLines.first { ($0["msg"] as? String) == "job dead-lettered" })
            #expect(dead["job"] as? String == String(gone))
            #expect(dead["queue"] as? String == "default")
            #expect(dead["destination"] as? String == "http://127.0.0.1:\(h.server.port)")
            #expect(dead["attempt"] as? String == "1")
            #expect(dead["class"] as? String == "client")
            #expect(dead["reason"] as? String == "permanent")
            let retry = try #require(jobLines.first { ($0["msg"] as? String) == "attempt failed; retrying" })
            #expect(retry["job"] as? String == String(flaky))
            #expect(retry["class"] as? String == "server")
        }
    }

    @Test func logfmtJobLinesCarryTheSameFields() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.respond(status: 410, headers: [], body: ""), forPath: "/gone")
            try h.start()
            let id = try h.enqueue("/gone")
            _ = try await h.waitFor(id, .dead)
            await h.stop()
            let line = try #require(h.logLines.all.first { $0.contains("msg=\"job dead-lettered\"") })
            for field in ["job=\(id) ", "queue=default ", "destination=http://127.0.0.1:\(h.server.port) ", "attempt=1 ", "class=client ",
                          "level=info ", "reason=permanent"] {
                #expect(line.contains(field), "\(field) missing in \(line)")
            }
        }
    }

    /// A server that echoes credentials back in an error body must not get them into
    /// the worker's logs or the stored attempt errors (which jobctl prints).
    @Test func secretValuesNeverReachLogsOrStoredErrors() async throws {
        try await WorkerHarness.with() { h in
            let echo = "Bearer tok-ECHO-1 s3cr3t tok-ECHO-2 cookie=tok-ECHO-3"
            h.server.setBehavior(.respond(status: 200, headers: [("Content-Type", "text/html")], body: echo), forPath: "/echo")
            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: echo)], forPath: "/fail")
            h.server.setBehavior(.respond(status: 401, headers: [], body: echo), forPath: "/fail")
            try h.start()
            func configure(_ request: inout EnqueueRequest) {
                request.headers = [
                    ("Authorization", .literal("Bearer tok-ECHO-1")),
                    ("X-Partner", .secret(name: "partner-token")),  // resolves to s3cr3t; the name looks harmless
                    ("X-Api-Key", .literal("tok-ECHO-2")),
                    ("Cookie", .literal("cookie=tok-ECHO-3")),
                ]
            }
            let invalid = try h.enqueue("/echo") { configure(&$0); $0.expectContentType = "application/json" }
            let failing = try h.enqueue("/fail", configure)
            let first = try await h.waitFor(invalid, .dead)
            let second = try await h.waitFor(failing, .dead)
            await h.stop()
            #expect(first.deadReason == "invalid_response")
            #expect(second.deadReason == "permanent")
            #expect(second.errors.map(\.errorClass) == ["server", "client"])
            #expect(h.server.requests.first { $0.path == "/echo" }?.header("X-Partner") == "s3cr3t", "the real values were sent")

            let stored = try h.db.query("select errors::text from courier.dead_letters order by id").rows.map { try $0.decode(0, as: String.self) }
            #expect(stored.count == 2)
            let everything = (h.logLines.all + stored + first.errors.map(\.message) + second.errors.map(\.message)).joined(separator: "\n")
            for secret in ["tok-ECHO-1", "tok-ECHO-2", "tok-ECHO-3", "s3cr3t"] {
                #expect(!everything.contains(secret), "\(secret) leaked into logs or stored errors:\n\(everything)")
            }
            #expect(first.errors.first?.message.contains("text/html") == true, "the message still says what was wrong")
        }
    }

    /// Issue 43 item 11, the worker's side: jobworker started with a mistyped database URL
    /// logged libpq's parse error, which quotes the URI, password and all, on every retry.
    /// The process runs as users run it (flag and variable); its log never holds the password.
    @Test func aMalformedDatabaseURLNeverPutsItsPasswordInTheLog() async throws {
        let urls = ["postgresql://courier:tok-WORKERPW-1@[::1/none", "postgresql://courier:tok%zzWORKERPW-2@127.0.0.1/none",
                    "host=127.0.0.1 password tok-WORKERPW-3"]
        for (index, url) in urls.enumerated() {
            let viaFlag = index % 2 == 0
            let worker = try SpawnedProcess("jobworker", viaFlag ? ["--database-url", url] : [],
                                            environment: viaFlag ? ["DATABASE_URL": ""] : ["DATABASE_URL": url])
            defer { worker.cleanUp() }
            let logged = try await eventually(timeout: .seconds(20)) { worker.output.contains("database unreachable") }
            worker.signal(SIGTERM)
            _ = await worker.waitForExit(timeout: .seconds(20))
            let output = worker.output
            #expect(logged && output.contains("invalid connection string"), "\(url): \(output)")
            #expect(!output.contains("WORKERPW"), "\(url) leaked its password: \(output)")
        }
    }

    /// A binding that cannot be read stops the worker at start, naming the variable, before
    /// it connects or claims anything: the jobs that name the secret would all fail later.
    @Test func anUnreadableSecretBindingStopsTheWorkerAtStart() async throws {
        let worker = try SpawnedProcess("jobworker", ["--database-url", "postgresql://courier@127.0.0.1:1/none"],
                                        environment: ["COURIER_SECRET_HOOK": "hook-value",
                                                      "COURIER_SECRET_HOOK_DESTINATIONS": "https://partner.example.com/hooks"])
        defer { worker.cleanUp() }
        let status = await worker.waitForExit(timeout: .seconds(20))
        let output = worker.output
        #expect(status == 2, "\(output)")
        #expect(output.contains("error: secrets: COURIER_SECRET_HOOK_DESTINATIONS: "), "\(output)")
        #expect(!output.contains("hook-value"), "the value is never printed")
        #expect(!output.contains("database unreachable"), "it stopped before connecting: \(output)")
    }
}
