import CourierCore
@testable import CourierStore
@testable import CourierWorker
import CourierHTTPServer
import Foundation
import Testing

/// The pure parts of the metrics endpoint: request heads, addresses, the text format.
@Suite struct MetricsFormatTests {
    typealias Head = HTTPServer.HeadParse

    func parse(_ text: String, limit: Int = 8192) -> Head {
        HTTPServer.parseHead(Array(text.utf8), maxHeaderBytes: limit)
    }

    @Test func aCompleteRequestHeadIsParsed() throws {
        guard case .request(let request) = parse("GET /metrics?name=x HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n") else {
            Issue.record("expected a request")
            return
        }
        #expect(request == HTTPServer.Request(method: "GET", path: "/metrics", query: "name=x", version: "HTTP/1.1",
                                             headers: [.init("Host", "a"), .init("Accept", "*/*")]))
        // Bare LF line ends are accepted too.
        guard case .request(let lf) = parse("HEAD /healthz HTTP/1.0\nHost: a\n\n") else {
            Issue.record("expected a request")
            return
        }
        #expect(lf.method == "HEAD" && lf.path == "/healthz" && lf.query == nil)
    }

    @Test func anIncompleteHeadAsksForMore() {
        #expect(parse("") == .incomplete)
        #expect(parse("GET /metr") == .incomplete)
        #expect(parse("GET /metrics HTTP/1.1\r\nHost: a\r\n") == .incomplete)
    }

    @Test func malformedHeadsAreRefusedWithTheRightStatus() {
        func status(_ text: String, limit: Int = 8192) -> Int? {
            if case .reject(let status, _) = parse(text, limit: limit) { return status }
            return nil
        }
        // No HTTP version (an HTTP/0.9 style line): refused as soon as the line is complete.
        #expect(status("GET /metrics\r\n") == 400)
        #expect(status("GET /metrics\r\n\r\n") == 400)
        #expect(status("\u{1}\u{2}garbage\u{ff}\r\n\r\n") == 400)
        #expect(status("get /metrics HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET metrics HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET  /metrics HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET /metrics HTTP/2.0\r\n\r\n") == 505)
        #expect(status("GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n") == 400)
        #expect(status("GET /metrics HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n") == 400)
        #expect(status("\r\n\r\n") == 400)
        // Larger than the limit, complete or not.
        let big = "GET /metrics HTTP/1.1\r\nX-Fill: " + String(repeating: "a", count: 9000)
        #expect(status(big) == 431)
        #expect(status(big + "\r\n\r\n") == 431)
        #expect(status("GET / HTTP/1.1\r\nHost: abc\r\n\r\n", limit: 10) == 431)
    }

    @Test func responsesAlwaysCloseAndCarryTheirLength() {
        let response = HTTPServer.Response(status: 405, text: "no\n", headers: [.init("Allow", "GET, HEAD")])
        let text = String(decoding: response.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        #expect(text.contains("\r\nContent-Length: 3\r\n"))
        #expect(text.contains("\r\nAllow: GET, HEAD\r\n"))
        #expect(text.hasSuffix("\r\nConnection: close\r\n\r\nno\n"))
        let head = String(decoding: response.serialized(includeBody: false), as: UTF8.self)
        #expect(head.hasSuffix("\r\n\r\n") && head.contains("Content-Length: 3"))
    }

    @Test func addressesAreParsedAndBadOnesNameTheFlag() throws {
        #expect(try HTTPServerAddress(parsing: "0.0.0.0:9464", field: "--metrics-addr") == HTTPServerAddress(host: "0.0.0.0", port: 9464))
        #expect(try HTTPServerAddress(parsing: ":9464", field: "--metrics-addr") == HTTPServerAddress(host: nil, port: 9464))
        #expect(try HTTPServerAddress(parsing: "localhost:0", field: "--metrics-addr") == HTTPServerAddress(host: "localhost", port: 0))
        #expect(try HTTPServerAddress(parsing: "[::1]:9464", field: "--metrics-addr") == HTTPServerAddress(host: "::1", port: 9464))
        #expect(HTTPServerAddress(host: "::1", port: 80).description == "[::1]:80")
        for bad in ["9464", "host:", "host:65536", "host:-1", "::1:9464", "[::1]9464", "[]:80", "a b:80", "host:9x"] {
            #expect(throws: ValidationError.self, "\(bad)") { try HTTPServerAddress(parsing: bad, field: "--metrics-addr") }
            do {
                _ = try HTTPServerAddress(parsing: bad, field: "--metrics-addr")
            } catch {
                #expect(error.field == "--metrics-addr")
            }
        }
    }

    @Test func theTextFormatEscapesAndFormats() throws {
        #expect(PrometheusText.format(3) == "3")
        #expect(PrometheusText.format(0.25) == "0.25")
        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(-.infinity) == "-Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
        #expect(PrometheusText.escapeLabelValue("a\\b\"c\nd") == #"a\\b\"c\nd"#)
        #expect(PrometheusText.escapeHelp("a\\b\nc") == #"a\\b\nc"#)
        var page = PrometheusText()
        page.family("demo_total", .counter, help: "A demo\nwith two lines.",
                    [.init("demo_total", [("path", "/x\"y\\z\nw")], 2)])
        page.family("demo_seconds", .histogram, help: "Latency.",
                    PrometheusText.histogramSamples("demo_seconds", buckets: [(0.5, 1), (1, 3)], sum: 2.25, count: 4))
        let parsed = try MetricsExposition(parsing: page.text)
        try parsed.checkConventions()
        #expect(parsed.value("demo_total", ["path": "/x\"y\\z\nw"]) == 2)
        #expect(parsed.value("demo_seconds_bucket", ["le": "+Inf"]) == 4)
        #expect(parsed.value("demo_seconds_sum") == 2.25)
        #expect(parsed.families["demo_total"]?.help == #"A demo\nwith two lines."#)
    }

    @Test func theWorkerPageIsValidBeforeAndAfterASample() throws {
        let metrics = WorkerMetrics()
        metrics.recordClaim(batch: 3)
        metrics.recordRetry(delay: .milliseconds(1500))
        metrics.recordDeadLetter(reason: .permanent)
        metrics.recordAckFlush(count: 3, latency: .milliseconds(4))
        let state = PrometheusText.WorkerState(workerID: "w1", version: "0.1.0", concurrency: 8, inFlight: 2,
                                               stopping: false, databaseReachable: true)
        let before = try MetricsExposition(parsing: PrometheusText.workerPage(
            metrics: metrics.snapshot(), state: state, sampling: .init()))
        try before.checkConventions()
        #expect(before.value("courier_jobs_in_flight") == 2)
        #expect(before.value("courier_claim_batch_size_bucket", ["le": "5"]) == 1)
        #expect(before.value("courier_claim_batch_size_bucket", ["le": "2"]) == 0)
        #expect(before.value("courier_retry_delay_seconds_bucket", ["le": "1"]) == 0)
        #expect(before.value("courier_retry_delay_seconds_bucket", ["le": "5"]) == 1)
        #expect(before.value("courier_retry_delay_seconds_sum") == 1.5)
        #expect(before.value("courier_dead_letters_total", ["reason": "permanent"]) == 1)
        #expect(before.value("courier_dead_letters_total", ["reason": "exhausted"]) == 0)
        #expect(before.value("courier_ack_latency_seconds_count") == 1)
        // Before the first database sample the sampled families have no samples (not zeros).
        #expect(before.families["courier_queue_depth"]?.samples.isEmpty == true)
        #expect(before.families["courier_breakers"]?.samples.isEmpty == true)
        #expect(before.value("courier_live_workers") == nil)

        let now = Date()
        let sample = MetricsServerSampler.Sample(
            takenAt: now.addingTimeInterval(-3),
            queueDepths: [.init(queue: "q\"1", state: "available", count: 4, oldestDueSeconds: 12.5)],
            deadLetters: ["ambiguous": 2], breakerStates: ["open": 1],
            openBreakers: [.init(destination: "https://a.example:443", state: "open", seconds: 90)],
            breakerTransitions: [.init(from: "closed", to: "open", count: 3)], liveWorkers: 2)
        let after = try MetricsExposition(parsing: PrometheusText.workerPage(
            metrics: metrics.snapshot(), state: state, sampling: .init(latest: sample, successes: 1, failures: 1), now: now))
        try after.checkConventions()
        #expect(after.value("courier_queue_depth", ["queue": "q\"1", "state": "available"]) == 4)
        #expect(after.value("courier_queue_oldest_due_seconds", ["queue": "q\"1"]) == 12.5)
        #expect(after.value("courier_breakers", ["state": "open"]) == 1)
        #expect(after.value("courier_breakers", ["state": "closed"]) == 0)
        #expect(after.value("courier_breaker_state_seconds", ["destination": "https://a.example:443", "state": "open"]) == 90)
        #expect(after.value("courier_breaker_transitions_total", ["from": "closed", "to": "open"]) == 3)
        #expect(after.value("courier_dead_letters_pending", ["reason": "ambiguous"]) == 2)
        #expect(after.value("courier_dead_letters_pending", ["reason": "permanent"]) == 0)
        #expect(after.value("courier_live_workers") == 2)
        #expect(abs((after.value("courier_metrics_sample_age_seconds") ?? -1) - 3) < 0.001)
        #expect(after.value("courier_metrics_sample_failures_total") == 1)
    }

    @Test func readinessFollowsStoppingAndTheDatabase() {
        func status(stopping: Bool, reachable: Bool, _ method: String = "GET", _ path: String = "/readyz") -> Int {
            let state = PrometheusText.WorkerState(workerID: "w", version: "v", concurrency: 1, inFlight: 0,
                                                   stopping: stopping, databaseReachable: reachable)
            return WorkerTestRoutes.route(HTTPServer.Request(method: method, path: path, query: nil, version: "HTTP/1.1"),
                                       state: { state }, page: { "" }).status
        }
        #expect(status(stopping: false, reachable: true) == 200)
        #expect(status(stopping: true, reachable: true) == 503)
        #expect(status(stopping: false, reachable: false) == 503)
        #expect(status(stopping: true, reachable: false, "GET", "/healthz") == 200)
        #expect(status(stopping: false, reachable: true, "POST", "/metrics") == 405)
        #expect(status(stopping: false, reachable: true, "GET", "/other") == 404)
        #expect(status(stopping: false, reachable: true, "HEAD", "/metrics") == 200)
    }

    @Test func aMissingMigrationMakesTheWorkerNotReadyAndShowsOnTheMetricsPage() {
        let state = PrometheusText.WorkerState(workerID: "w", version: "v", concurrency: 1, inFlight: 0, stopping: false,
                                               databaseReachable: true, missingMigrations: ["0007_cheaper_value_checks.sql"])
        #expect(!state.ready)
        let response = WorkerTestRoutes.route(HTTPServer.Request(method: "GET", path: "/readyz", query: nil, version: "HTTP/1.1"),
                                           state: { state }, page: { "" })
        #expect(response.status == 503)
        #expect(String(decoding: response.body, as: UTF8.self).contains("0007_cheaper_value_checks.sql"))
        let page = PrometheusText.workerPage(metrics: WorkerMetrics().snapshot(), state: state,
                                             sampling: .init())
        #expect(page.contains("courier_schema_missing_migrations 1"), "\(page.prefix(600))")
    }

    /// Jobs claimed per fairness key: the top 20 keys by count keep their label, the rest are
    /// summed as other, the default key is "(default)", and the keys counted one by one stay bounded.
    @Test func fairClaimsArePerKeyWithTheTopKeysOwnLabels() throws {
        let metrics = WorkerMetrics()
        var counts: [String: Int] = ["": 3]
        for i in 0..<25 { counts["tenant-\(i)"] = 100 + i }
        metrics.recordFairClaim(counts)
        let state = PrometheusText.WorkerState(workerID: "w", version: "v", concurrency: 1, inFlight: 0, stopping: false,
                                               databaseReachable: true, missingMigrations: [])
        let page = PrometheusText.workerPage(metrics: metrics.snapshot(), state: state, sampling: .init())
        let lines = page.split(separator: "\n").filter { $0.hasPrefix("courier_fairness_key_claimed_total{") }
        #expect(lines.count == 21, "20 keys and other: \(lines)")
        #expect(lines.contains("courier_fairness_key_claimed_total{fairness_key=\"tenant-24\"} 124"))
        // Folded: tenant-0 .. tenant-4 (100..104) and the default key's 3.
        #expect(lines.contains("courier_fairness_key_claimed_total{fairness_key=\"other\"} 513"), "\(lines)")
        for i in 0..<WorkerMetrics.trackedFairnessKeys { metrics.recordFairClaim(["k\(i)": 1]) }
        #expect(metrics.snapshot().claimedByFairnessKey.count <= WorkerMetrics.trackedFairnessKeys + 1, "bounded")
    }
}
