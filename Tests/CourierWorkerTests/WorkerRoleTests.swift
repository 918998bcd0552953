import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import CourierHTTPServer
import Foundation
import Postgres
import Testing

/// A real worker logged in as a role that is only a member of `courier_worker`
/// (sql/0006_roles.sql): every path it takes must be covered by the grants.
@Suite(.serialized) struct WorkerRoleTests {
    @Test func aWorkerWithOnlyTheWorkerRoleRunsEveryPath() async throws {
        try await WorkerHarness.with() { h in
            let login = "ct_login_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let admin = try PostgresConnection.connect(PostgresConfiguration(connectionString: h.database.adminURL))
            try admin.simpleQuery("create role \(login) login; grant courier_worker to \(login)")
            defer {
                _ = try? admin.query("select pg_terminate_backend(pid) from pg_stat_activity where usename = \(login)")
                try? admin.simpleQuery("drop role if exists \(login)")
                admin.close()
            }
            var parameters = try PostgresConnectionString.parse(h.database.url).filter { $0.key != "user" }
            parameters.append(("user", login))
            let url = PostgresConnectionString.render(parameters)

            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "")], forPath: "/flaky")
            h.server.enqueueBehaviors([.respond(status: 503, headers: [("Retry-After", "1")], body: "")], forPath: "/busy")
            h.server.setBehavior(.respond(status: 404, headers: [], body: ""), forPath: "/gone")
            h.server.setBehavior(.respond(status: 500, headers: [], body: ""), forPath: "/down")
            try h.start {
                $0.database = PostgresConfiguration(connectionString: url, applicationName: "jobworker")
                $0.breakerPolicy.failureThreshold = 3
                $0.breakerPolicy.cooldown = .milliseconds(300)
                $0.breakerPolicy.cooldownMax = .seconds(1)
            }
            let server = try WorkerEndpoint.start(for: h.worker, address: HTTPServerAddress(host: "127.0.0.1", port: 0),
                                                 logger: Logger(level: .error, sink: { _ in }), sampleInterval: .milliseconds(200))
            defer { server.stop() }

            let ok = try h.enqueue("/ok")
            let flaky = try h.enqueue("/flaky")
            let busy = try h.enqueue("/busy")
            let gone = try h.enqueue("/gone")
            _ = try await h.waitFor(ok, .succeeded)
            _ = try await h.waitFor(flaky, .succeeded)
            _ = try await h.waitFor(busy, .succeeded)
            #expect(try await h.waitFor(gone, .dead).deadReason == "permanent")

            // Three failures open the breaker of a destination of its own; a probe closes it again.
            let failing = try (0..<3).map { _ in try h.enqueue("/down") { $0.destination = "role-test"; $0.maxAttempts = 1 } }
            for id in failing { _ = try await h.waitFor(id, .dead) }
            let opened = try await h.eventually {
                (try? h.db.query("select state from courier.breakers where destination = 'role-test'").rows.first?.decode(0, as: String.self)) == "open"
            }
            #expect(opened, "the worker role reports breaker evidence")
            h.server.setBehavior(.json200, forPath: "/down")
            let probe = try h.enqueue("/down") { $0.destination = "role-test" }
            _ = try await h.waitFor(probe, .succeeded)
            let closed = try await h.eventually {
                (try? h.db.query("select state from courier.breakers where destination = 'role-test'").rows.first?.decode(0, as: String.self)) == "closed"
            }
            #expect(closed, "the worker role runs the probe and records its result")

            // A running job cancelled by an operator.
            h.server.setBehavior(.slow(delay: .seconds(30), then: .json200), forPath: "/slow")
            let slow = try h.enqueue("/slow")
            // The request has reached the server: the job has started (claimed alone is not enough).
            #expect(try await h.eventually { h.server.requestCount(path: "/slow") == 1 })
            _ = try JobsTable.cancel(ids: [slow], on: h.db)
            #expect(try await h.waitFor(slow, .dead).deadReason == "cancelled")

            // Attempt statistics are flushed every few seconds, and the metrics sampler reads as the worker role.
            #expect(try await h.eventually(timeout: .seconds(30)) {
                (try? h.db.query("select count(*)::bigint from courier.attempt_stats").rows[0].decode(0, as: Int.self)) ?? 0 > 0
            }, "attempt statistics are written")
            #expect(try await h.eventually { server.sampler.status.successes ?? 0 >= 2 })
            #expect(server.sampler.status.failures == 0)
            #expect(try MetricsTestClient.request(port: server.port, "GET", "/readyz").status == 200)

            let registered = try h.db.query("select count(*)::bigint from courier.workers").rows[0].decode(0, as: Int.self)
            #expect(registered == 1, "the worker registered itself")
            await h.stop()
            // Every line about a job names it fully, including the breaker's probe line.
            let jobLines = h.logLines.all.filter { $0.contains(" job=") }
            #expect(jobLines.contains { $0.contains("probing") }, "the probe was logged")
            for line in jobLines {
                for field in [" queue=", " destination=", " attempt=", " class="] {
                    #expect(line.contains(field), "\(field) missing in \(line)")
                }
            }
            let problems = h.logLines.all.filter { $0.contains("statement failed") || $0.contains("42501") || $0.contains("permission denied") }
            #expect(problems.isEmpty, "statements refused to the worker role:\n\(problems.joined())")
            #expect(try h.db.query("select count(*)::bigint from courier.workers").rows[0].decode(0, as: Int.self) == 0,
                    "the worker deregistered")
        }
    }
}
