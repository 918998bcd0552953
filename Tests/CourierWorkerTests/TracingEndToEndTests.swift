import CourierCore
import CourierHTTPServer
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// The Python helpers in Receivers/, run with the test command's Python (`COURIER_TEST_PYTHON`,
/// whose .venv has opentelemetry-proto, opentelemetry-sdk and psycopg from
/// scripts/requirements-test.txt).
enum TracingPython {
    static func python() throws -> String {
        guard let python = ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"], !python.isEmpty else {
            throw ReceiverError(message: "COURIER_TEST_PYTHON is not set: run the suite with scripts/test.sh, which installs opentelemetry-proto into .venv")
        }
        return python
    }

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Receivers/\(name)").path
    }

    /// Runs a script to its end; returns its standard output (throws with its standard error when it fails).
    static func run(_ name: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try python())
        process.arguments = [script(name)] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ReceiverError(message: "\(name) failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }
}

/// Receivers/otlp_collector.py: a loopback OTLP/HTTP collector decoding with opentelemetry-proto.
final class OTLPCollector: @unchecked Sendable {
    let process = Process()
    let logPath: String
    let port: Int

    init(status: Int = 200) throws {
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("courier-otlp-\(UUID().uuidString).ndjson").path
        process.executableURL = URL(fileURLWithPath: try TracingPython.python())
        process.arguments = [TracingPython.script("otlp_collector.py"), logPath, String(status)]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw ReceiverError(message: "the OTLP collector did not start")
        }
        self.port = port
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every span received so far.
    func spans() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return try TracingPython.jsonLines(text)
    }

    /// The spans of job `id`, by attempt.
    func spans(ofJob id: Int64) throws -> [[String: Any]] {
        try spans().filter { ($0["attributes"] as? [String: Any])?["messaging.message.id"] as? String == String(id) }
            .sorted { (($0["attributes"] as? [String: Any])?["courier.job.attempt"] as? Int ?? 0)
                < (($1["attributes"] as? [String: Any])?["courier.job.attempt"] as? Int ?? 0) }
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// Tracing against real OpenTelemetry parts: exports decoded by opentelemetry-proto, an
/// application traced with opentelemetry-sdk enqueuing through psycopg, `traceparent` on
/// the wire only where a destination opted in, redaction in span attributes, and a dead
/// collector that costs jobs nothing.
@Suite(.serialized) struct TracingEndToEndTests {
    static func tracing(_ endpoint: String, _ change: (inout TracingConfiguration) -> Void = { _ in }) -> TracingConfiguration {
        var tracing = TracingConfiguration(endpoint: endpoint + "/v1/traces")
        tracing.scheduleDelay = .milliseconds(50)
        tracing.resource = [.init("service.name", .string("courier-test"))]
        change(&tracing)
        return tracing
    }

    static func attributes(_ span: [String: Any]) -> [String: Any] { span["attributes"] as? [String: Any] ?? [:] }

    @Test func anApplicationsSpanIsLinkedFromEveryAttemptAndOnlyAnOptedInDestinationSeesTraceparent() async throws {
        let collector = try OTLPCollector()
        defer { collector.stop() }
        try await WorkerHarness.with { harness in
            let port = harness.server.port
            // Two spellings of one loopback server are two destinations: one opts in.
            let optedIn = "http://localhost:\(port)"
            _ = try DestinationsTable.merge(.init(destination: optedIn), propagateTrace: true, on: harness.db)
            harness.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "down")], forPath: "/opted")
            try harness.start { $0.tracing = Self.tracing(collector.baseURL) }
            let output = try TracingPython.run("traced_enqueue.py", [harness.database.url, optedIn + "/opted?token=hunter2-secret&x=1",
                                                                     "http://127.0.0.1:\(port)/plain"])
            let app = try #require(try TracingPython.jsonLines(output).first)
            let traceID = try #require(app["trace_id"] as? String)
            let appSpan = try #require(app["span_id"] as? String)
            let jobs = try #require(app["jobs"] as? [Int])
            let (byParameter, bySetting) = (Int64(jobs[0]), Int64(jobs[1]))
            _ = try await harness.waitFor(byParameter, .succeeded)
            _ = try await harness.waitFor(bySetting, .succeeded)
            #expect(try await harness.eventually { try collector.spans(ofJob: byParameter).count == 2 && collector.spans(ofJob: bySetting).count == 1 })

            let attempts = try collector.spans(ofJob: byParameter)
            for span in attempts + (try collector.spans(ofJob: bySetting)) {
                #expect(span["trace_id"] as? String == traceID, "every attempt is in the application's trace")
                #expect(span["parent_span_id"] as? String == "", "linked, not parented, by default")
                #expect(span["kind"] as? Int == 5, "SPAN_KIND_CONSUMER")
                #expect(span["name"] as? String == "process default")
                let links = span["links"] as? [[String: Any]] ?? []
                #expect(links.contains { $0["trace_id"] as? String == traceID && $0["span_id"] as? String == appSpan },
                        "links to the enqueuing span: \(links)")
                #expect(Self.attributes(span)["messaging.system"] as? String == "courier")
                #expect((span["resource"] as? [String: Any])?["service.name"] as? String == "courier-test")
            }
            // The retry links to the first attempt; the first failed with the server's class.
            let (first, second) = (attempts[0], attempts[1])
            #expect(Self.attributes(first)["error.type"] as? String == "server")
            #expect(Self.attributes(first)["http.response.status_code"] as? Int == 500)
            #expect((first["events"] as? [[String: Any]])?.map { $0["name"] as? String } == ["courier.retry_scheduled"])
            #expect((first["status"] as? [String: Any])?["code"] as? Int == 2)
            #expect((second["links"] as? [[String: Any]] ?? []).contains { $0["span_id"] as? String == first["span_id"] as? String })
            #expect(Self.attributes(second)["http.response.status_code"] as? Int == 200)
            // Redaction holds in span attributes.
            let url = try #require(Self.attributes(first)["url.full"] as? String)
            #expect(!url.contains("hunter2") && url.contains("token=[REDACTED]"), "\(url)")

            // On the wire: the opted-in destination saw each attempt's span as parent, with the
            // job's tracestate; the other saw no trace header at all.
            let opted = harness.server.requests.filter { $0.path.hasPrefix("/opted") }
            #expect(opted.count == 2)
            for (request, span) in zip(opted, attempts) {
                let header = try #require(request.header("traceparent"))
                let context = try #require(TraceContext(traceparent: header))
                #expect(context.traceIDHex == traceID && context.spanIDHex == span["span_id"] as? String)
                #expect(request.header("tracestate") == "app=checkout")
            }
            let plain = try #require(harness.server.requests.first { $0.path == "/plain" })
            #expect(plain.header("traceparent") == nil && plain.header("tracestate") == nil)

            // The context is kept on the job: shown, and in each attempt's error entry.
            #expect(try harness.job(byParameter)?.errors.count ?? 0 >= 1)
        }
    }

    @Test func deadLetteringIsAnEventAndAReplayKeepsTheContext() async throws {
        let collector = try OTLPCollector()
        defer { collector.stop() }
        try await WorkerHarness.with { harness in
            harness.server.setBehavior(.respond(status: 404, headers: [], body: "gone"), forPath: "/gone")
            let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            let id = try harness.enqueue("/gone") { $0.traceparent = traceparent; $0.tracestate = "k=v" }
            try harness.start { $0.tracing = Self.tracing(collector.baseURL) }
            _ = try await harness.waitFor(id, .dead)
            #expect(try await harness.eventually { try !collector.spans(ofJob: id).isEmpty })
            let span = try #require(try collector.spans(ofJob: id).first)
            let events = span["events"] as? [[String: Any]] ?? []
            #expect(events.map { $0["name"] as? String } == ["courier.dead_lettered"])
            #expect((events.first?["attributes"] as? [String: Any])?["courier.dead_letter.reason"] as? String == "permanent")
            let kept = try harness.db.query("select traceparent, tracestate from courier.dead_letters where job_id = \(id)").rows
            #expect(try kept.first?.decode(0, as: String?.self) == traceparent)
            #expect(try kept.first?.decode(1, as: String?.self) == "k=v")
            let replayed = try harness.db.query("select new_job_id from courier.replay_dead_letters(ids => array(select id from courier.dead_letters where job_id = \(id)))")
                .rows[0].decode(0, as: Int64.self)
            #expect(try await harness.eventually { try collector.spans(ofJob: replayed).count == 1 })
            #expect(try collector.spans(ofJob: replayed).first?["trace_id"] as? String == "0af7651916cd43dd8448eb211c80319c")
        }
    }

    static func events(_ span: [String: Any]) -> [String: [String: Any]] {
        Dictionary((span["events"] as? [[String: Any]] ?? []).map { ($0["name"] as? String ?? "", $0["attributes"] as? [String: Any] ?? [:]) },
                   uniquingKeysWith: { first, _ in first })
    }

    /// What held a job back before its attempt, on that attempt's span: a breaker's hold
    /// (courier.breaker_held, summed by the keeper on release) and a destination's cap
    /// (courier.traffic_wait, for the jobs the gated claim leased after they waited for a slot).
    @Test func aBreakerHoldAndATrafficWaitAreEventsOnTheAttemptThatFollows() async throws {
        let collector = try OTLPCollector()
        defer { collector.stop() }
        try await WorkerHarness.with { harness in
            let port = harness.server.port
            // Capped at one in flight, each request answered after 300 ms: the third job waits for two.
            _ = try DestinationsTable.merge(.init(destination: harness.server.baseURL, maxInFlight: 1), on: harness.db)
            harness.server.setBehavior(.slow(delay: .milliseconds(300), then: .json200), forPath: "/capped")
            let capped = try (0..<3).map { _ in try harness.enqueue("/capped") }
            // Another spelling of the server is another destination: its breaker is open, and its job
            // has been due and held for 30 s (set on the row, so no test sleeps for it).
            let heldDestination = "http://localhost:\(port)"
            _ = try BreakersTable.force(destination: heldDestination, action: .open, on: harness.db)
            let held = try TestRows(harness.db).job(url: heldDestination + "/held")
            try harness.db.query("""
                update courier.jobs set held_since = now() - interval '30 seconds', run_at = now() - interval '30 seconds'
                where id = \(held)
                """)
            try harness.start { $0.tracing = Self.tracing(collector.baseURL) }
            for id in capped { _ = try await harness.waitFor(id, .succeeded) }
            _ = try BreakersTable.force(destination: heldDestination, action: .close, on: harness.db)
            _ = try await harness.waitFor(held, .succeeded)
            #expect(try await harness.eventually { try (capped + [held]).allSatisfy { try collector.spans(ofJob: $0).count == 1 } })

            let heldEvents = Self.events(try #require(try collector.spans(ofJob: held).first))
            let heldMs = try #require(heldEvents["courier.breaker_held"]?["courier.held_ms"] as? Int, "\(heldEvents)")
            #expect(heldMs >= 30_000, "the time it was due while held: \(heldMs) ms")
            #expect(heldEvents["courier.traffic_wait"] == nil, "its destination has no traffic policy")

            let waits = try capped.map { id in
                try Self.events(try #require(try collector.spans(ofJob: id).first))["courier.traffic_wait"]?["courier.waited_ms"] as? Int ?? 0
            }
            #expect((waits.max() ?? 0) >= 500, "the last of three capped at one, 300 ms each, waited for two: \(waits)")
            for id in capped {
                #expect(Self.events(try #require(try collector.spans(ofJob: id).first))["courier.breaker_held"] == nil)
            }
        }
    }

    @Test func aDeadCollectorStopsNoJobAndDropsAreCounted() async throws {
        try await WorkerHarness.with { harness in
            let ids = try TestRows(harness.db).jobs(20, url: harness.server.baseURL + "/ok")
            try harness.start {
                $0.tracing = Self.tracing(FaultServer.refusedPortURL()) { tracing in
                    tracing.maxQueueSize = 4
                    tracing.maxBatchSize = 4
                    tracing.exportAttempts = 1
                    tracing.exportTimeout = .milliseconds(500)
                }
            }
            for id in ids { _ = try await harness.waitFor(id, .succeeded) }
            #expect(try await harness.eventually { harness.worker.metrics.snapshot().spansDropped == 20 })
            #expect(harness.worker.metrics.snapshot().spansExported == 0)
            let state = PrometheusText.WorkerState(workerID: "w1", version: "t", concurrency: 8, inFlight: 0,
                                                   stopping: false, databaseReachable: true)
            let page = PrometheusText.workerPage(metrics: harness.worker.metrics.snapshot(), state: state, sampling: .init())
            #expect(page.contains("courier_spans_dropped_total 20"), "\(page.split(separator: "\n").filter { $0.contains("spans") })")
        }
    }

    @Test func noSpanIsBuiltWhenTracingIsOff() async throws {
        try await WorkerHarness.with { harness in
            let id = try harness.enqueue("/ok") { $0.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }
            try harness.start()
            _ = try await harness.waitFor(id, .succeeded)
            #expect(harness.worker.tracer == nil)
            // Not opted in: no trace header.
            #expect(harness.server.requests.first?.header("traceparent") == nil)
        }
    }

    /// The encoder's output, every field Courier writes, read back by the official decoder.
    @Test func theEncoderRoundTripsThroughOpentelemetryProto() throws {
        let context = try #require(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let link = try #require(TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"))
        let span = SpanData(context: context, parentSpanID: 0x1122_3344_5566_7788, traceState: "k=v", name: "process q", kind: .consumer,
                            startUnixNano: 1_700_000_000_000_000_000, endUnixNano: 1_700_000_000_250_000_000,
                            attributes: [.init("s", .string("é")), .init("i", .int(-7)), .init("d", .double(1.5)), .init("b", .bool(true)),
                                         .init("zero", .int(0)), .init("empty", .string(""))],
                            events: [.init(name: "e", timeUnixNano: 1_700_000_000_100_000_000, attributes: [.init("n", .int(3))])],
                            links: [.init(context: link, traceState: "x=y", attributes: [.init("courier.link", .string("enqueue"))])],
                            statusCode: .error, statusMessage: "boom")
        let body = OTLPTraceEncoder.encode([span], resource: [.init("service.name", .string("svc"))], scopeName: "courier", scopeVersion: "1")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-otlp-\(UUID().uuidString).bin")
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let decoded = try #require(try TracingPython.jsonLines(try TracingPython.run("otlp_collector.py", ["--decode", file.path])).first)
        #expect(decoded["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(decoded["span_id"] as? String == "00f067aa0ba902b7")
        #expect(decoded["parent_span_id"] as? String == "1122334455667788")
        #expect(decoded["trace_state"] as? String == "k=v")
        #expect(decoded["name"] as? String == "process q")
        #expect(decoded["kind"] as? Int == 5)
        #expect((decoded["start_time_unix_nano"] as? NSNumber)?.uint64Value == 1_700_000_000_000_000_000)
        #expect((decoded["end_time_unix_nano"] as? NSNumber)?.uint64Value == 1_700_000_000_250_000_000)
        let attributes = Self.attributes(decoded)
        #expect(attributes["s"] as? String == "é" && attributes["i"] as? Int == -7 && attributes["d"] as? Double == 1.5)
        #expect(attributes["b"] as? Bool == true && attributes["zero"] as? Int == 0 && attributes["empty"] as? String == "")
        let events = decoded["events"] as? [[String: Any]] ?? []
        #expect(events.first?["name"] as? String == "e" && (events.first?["attributes"] as? [String: Any])?["n"] as? Int == 3)
        let links = decoded["links"] as? [[String: Any]] ?? []
        #expect(links.first?["trace_id"] as? String == "0af7651916cd43dd8448eb211c80319c")
        #expect(links.first?["span_id"] as? String == "b7ad6b7169203331" && links.first?["trace_state"] as? String == "x=y")
        #expect((decoded["status"] as? [String: Any])?["code"] as? Int == 2)
        #expect((decoded["status"] as? [String: Any])?["message"] as? String == "boom")
        #expect(decoded["flags"] as? Int == 1)
        #expect((decoded["resource"] as? [String: Any])?["service.name"] as? String == "svc")
        #expect((decoded["scope"] as? [String: Any])?["name"] as? String == "courier")
    }
}
