import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import CourierHTTPServer
import Foundation
import Postgres
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The endpoint of a real worker on a real database: scraped, parsed, and watched move.
@Suite(.serialized) struct MetricsEndpointTests {
    func scrape(_ port: Int) throws -> MetricsExposition {
        let response = try MetricsTestClient.request(port: port, "GET", "/metrics")
        #expect(response.status == 200)
        let page = try MetricsExposition(parsing: response.body)
        try page.checkConventions()
        return page
    }

    /// Scrapes until `condition` holds (the sampled families change every sample interval).
    /// Polls with `eventually`, holding no thread the worker's jobs need.
    func scrapeUntil(_ port: Int, timeout: Duration = .seconds(20), _ condition: (MetricsExposition) -> Bool) async throws -> MetricsExposition {
        var page = try scrape(port)
        _ = try await eventually(timeout: timeout, every: .milliseconds(50)) {
            page = try scrape(port)
            return condition(page)
        }
        return page
    }

    @Test func theEndpointIsScrapedParsedAndItsCountersMoveWhenJobsRun() async throws {
        try await WorkerHarness.with() { h in
            try h.start()
            let server = try WorkerEndpoint.start(for: h.worker, address: HTTPServerAddress(host: "127.0.0.1", port: 0),
                                                 logger: Logger(level: .error, sink: { _ in }), sampleInterval: .milliseconds(100))
            defer { server.stop() }

            let before = try scrape(server.port)
            let expected = [
                "courier_worker_info", "courier_jobs_in_flight", "courier_worker_ready", "courier_attempts_total",
                "courier_job_outcomes_total", "courier_jobs_succeeded_after_retry_total", "courier_dead_letters_total",
                "courier_retry_delay_seconds", "courier_claim_batch_size", "courier_ack_latency_seconds",
                "courier_lease_renewal_seconds", "courier_queue_depth", "courier_queue_oldest_due_seconds", "courier_breakers", "courier_breaker_state_seconds",
                "courier_breaker_transitions_total", "courier_dead_letters_pending", "courier_live_workers",
            ]
            for family in expected { #expect(before.families[family] != nil, "missing family \(family)") }
            #expect(before.families["courier_retry_delay_seconds"]?.type == "histogram")
            #expect(before.families["courier_attempts_total"]?.type == "counter")
            #expect(before.value("courier_worker_ready") == 1)
            #expect(before.value("courier_attempts_total", ["class": "success"]) == 0)

            // One success, one success after a retry, one permanent failure.
            h.server.setBehavior(.respond(status: 404, headers: [], body: "gone"), forPath: "/gone")
            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "")], forPath: "/flaky")
            let ok = try h.enqueue("/ok")
            let flaky = try h.enqueue("/flaky")
            let gone = try h.enqueue("/gone")
            _ = try await h.waitFor(ok, .succeeded)
            _ = try await h.waitFor(flaky, .succeeded)
            _ = try await h.waitFor(gone, .dead)
            // Waiting work in a queue nobody serves, and a breaker an operator opened.
            _ = try h.enqueue("/later") { $0.queue = "metrics_later"; $0.runAt = Date().addingTimeInterval(3600) }
            try BreakersTable.force(destination: "https://down.example:443", action: .open, on: h.db)

            let after = try await scrapeUntil(server.port) { page in
                page.value("courier_queue_depth", ["queue": "metrics_later", "state": "available"]) == 1
                    && page.value("courier_breakers", ["state": "open"]) == 1
                    && page.value("courier_dead_letters_pending", ["reason": "permanent"]) == 1
                    && (page.value("courier_acked_jobs_total") ?? 0) >= 4
                    // Counted just after the result is queued, so possibly after the database shows it.
                    && page.value("courier_dead_letters_total", ["reason": "permanent"]) == 1
            }
            #expect(after.value("courier_attempts_total", ["class": "success"]) == 2)
            #expect(after.value("courier_attempts_total", ["class": "server"]) == 1)
            #expect(after.value("courier_attempts_total", ["class": "client"]) == 1)
            #expect(after.value("courier_job_outcomes_total", ["outcome": "succeeded"]) == 2)
            #expect(after.value("courier_job_outcomes_total", ["outcome": "retried"]) == 1)
            #expect(after.value("courier_job_outcomes_total", ["outcome": "dead_lettered"]) == 1)
            #expect(after.value("courier_jobs_succeeded_after_retry_total") == 1)
            #expect(after.value("courier_dead_letters_total", ["reason": "permanent"]) == 1)
            #expect(after.value("courier_retry_delay_seconds_count") == 1)
            #expect((after.value("courier_claim_batch_size_count") ?? 0) >= 1)
            #expect((after.value("courier_claim_batch_size_sum") ?? 0) >= 4, "four claims of the three jobs and the retry")
            #expect((after.value("courier_ack_latency_seconds_count") ?? 0) >= 1)
            #expect((after.value("courier_lease_renewal_seconds_count") ?? 0) >= 1, "the heartbeater's renewals are timed")
            #expect((after.value("courier_acked_jobs_total") ?? 0) >= 4)
            #expect(after.value("courier_queue_depth", ["queue": "metrics_later", "state": "available"]) == 1)
            #expect(after.value("courier_breakers", ["state": "open"]) == 1)
            #expect((after.value("courier_breaker_state_seconds", ["destination": "https://down.example:443", "state": "open"]) ?? -1) >= 0)
            #expect((after.value("courier_breaker_transitions_total", ["to": "open"]) ?? 0) >= 1)
            #expect(after.value("courier_dead_letters_pending", ["reason": "permanent"]) == 1)
            #expect(after.value("courier_live_workers").map { $0 >= 1 } == true)
            #expect(after.value("courier_metrics_sample_failures_total") == 0)
        }
    }

    @Test func readyzTurns503WhenTheWorkerBeginsToShutDown() async throws {
        try await WorkerHarness.with() { h in
            // A job that outlives the grace check keeps the worker in its shutdown for a while.
            h.server.setBehavior(.slow(delay: .seconds(2), then: .json200), forPath: "/slow")
            try h.start { $0.shutdownGrace = .seconds(10) }
            let server = try WorkerEndpoint.start(for: h.worker, address: HTTPServerAddress(host: "127.0.0.1", port: 0),
                                                 logger: Logger(level: .error, sink: { _ in }), sampleInterval: .milliseconds(200))
            defer { server.stop() }
            #expect(try MetricsTestClient.request(port: server.port, "GET", "/readyz").status == 200)
            let slow = try h.enqueue("/slow")
            // The request has reached the server: the job has started (claimed alone is not enough).
            #expect(try await h.eventually { h.server.requestCount(path: "/slow") == 1 })
            h.worker.shutdown()
            let during = try MetricsTestClient.request(port: server.port, "GET", "/readyz")
            #expect(during.status == 503)
            #expect(during.body.contains("shutting down"))
            #expect(try MetricsTestClient.request(port: server.port, "GET", "/healthz").status == 200, "alive while draining")
            let page = try scrape(server.port)
            #expect(page.value("courier_worker_stopping") == 1)
            #expect(page.value("courier_worker_ready") == 0)
            await h.stop()
            _ = try await h.waitFor(slow, .succeeded)
        }
    }

    @Test func anUnreachableDatabaseMakesReadyz503ButMetricsStillAnswer() async throws {
        // A port where nothing listens: every connection attempt is refused at once.
        let closedPort = try Self.unusedPort()
        var configuration = WorkerConfiguration(database: PostgresConfiguration(
            connectionString: "host=127.0.0.1 port=\(closedPort) user=courier dbname=none connect_timeout=2"))
        configuration.shutdownGrace = .seconds(1)
        configuration.pollInterval = .milliseconds(100)
        let worker = Worker(configuration: configuration, httpHandler: NoopJobHandler(), logger: Logger(level: .error, sink: { _ in }))
        let server = try WorkerEndpoint.start(for: worker, address: HTTPServerAddress(host: "127.0.0.1", port: 0),
                                             logger: Logger(level: .error, sink: { _ in }), sampleInterval: .milliseconds(100))
        defer { server.stop() }
        let run = Task.detached { await worker.run() }
        var readiness = 0
        _ = try await eventually(timeout: .seconds(20), every: .milliseconds(50)) {
            readiness = try MetricsTestClient.request(port: server.port, "GET", "/readyz").status
            return readiness == 503
        }
        #expect(readiness == 503)
        #expect(try MetricsTestClient.request(port: server.port, "GET", "/healthz").status == 200)
        let page = try await scrapeUntil(server.port) { ($0.value("courier_metrics_sample_failures_total") ?? 0) >= 1 }
        #expect(page.value("courier_database_reachable") == 0)
        #expect((page.value("courier_metrics_sample_failures_total") ?? 0) >= 1)
        #expect(page.families["courier_queue_depth"]?.samples.isEmpty == true, "no sample was ever taken")
        worker.shutdown()
        await run.value
    }

    @Test func jobworkerServesTheEndpointAndExitsOneWhenThePortIsTaken() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let port = try Self.unusedPort()
        let worker = try SpawnedProcess("jobworker", ["--database-url", database.url, "--metrics-addr", "127.0.0.1:\(port)",
                                                      "--shutdown-grace", "2s"])
        defer { worker.cleanUp() }
        var health: MetricsTestResponse?
        _ = await eventually(timeout: .seconds(30), every: .milliseconds(50)) {
            health = try? MetricsTestClient.request(port: port, "GET", "/healthz")
            return health != nil
        }
        #expect(health?.status == 200, "jobworker should serve /healthz: \(worker.output)")
        #expect(try MetricsTestClient.request(port: port, "GET", "/readyz").status == 200)
        #expect(try scrape(port).value("courier_worker_ready") == 1)

        // A second worker on the same port stops at once with exit status 1.
        let clash = try SpawnedProcess.run("jobworker", ["--database-url", database.url, "--metrics-addr", "127.0.0.1:\(port)"],
                                           timeout: .seconds(60))
        #expect(clash.status == 1)
        #expect(clash.output.contains("cannot start the metrics endpoint"))
        #expect(!clash.output.contains("worker starting"), "the worker must not start when the endpoint cannot")

        let bad = try SpawnedProcess.run("jobworker", ["--database-url", database.url, "--metrics-addr", "127.0.0.1"],
                                         timeout: .seconds(60))
        #expect(bad.status == 2)
        #expect(bad.output.contains("--metrics-addr"))

        worker.signal(SIGTERM)
        _ = await eventually(timeout: .seconds(30), every: .milliseconds(50)) { !worker.isRunning }
        #expect(worker.wait(timeout: .seconds(1)) == 0)
        #expect(throws: LoopbackConnection.Failure.self, "the endpoint closes with the process") {
            _ = try MetricsTestConnection(port: port)
        }
    }

    /// A loopback port that was free a moment ago.
    static func unusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw MetricsTestError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
