import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

@Suite(.serialized) struct WorkerEndToEndTests {
    @Test func deliversJobsWithTheirIdempotencyKeyAndRecordsSuccess() async throws {
        try await WorkerHarness.with() { h in
            try h.start()
            var ids: [Int64] = []
            for i in 0..<40 {
                ids.append(try h.enqueue("/hook/\(i)") { $0.body = #"{"n":\#(i)}"#; $0.headers = [("X-Trace", .literal("t\(i)"))] })
            }
            for id in ids { _ = try await h.waitFor(id, .succeeded) }
            #expect(h.server.requestCount() == 40)
            for (i, id) in ids.enumerated() {
                let request = try #require(h.server.requests.first { $0.path == "/hook/\(i)" })
                let job = try #require(try h.job(id))
                #expect(request.method == "POST")
                #expect(request.header("Idempotency-Key") == job.idempotencyKey)
                #expect(request.header("X-Trace") == "t\(i)")
                #expect(request.header("Content-Type") == "application/json")
                #expect(request.bodyText == #"{"n":\#(i)}"#)
                #expect(job.finalStatus == 200)
                #expect(job.attempt == 1)
            }
            #expect(try h.db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func retentionZeroDeliversWithoutArchivingAndStatsStillCountSuccesses() async throws {
        try await WorkerHarness.with() { h in
            try h.start { $0.retention = .zero }
            var ids: [Int64] = []
            for i in 0..<20 { ids.append(try h.enqueue("/plain/\(i)")) }
            #expect(try await h.waitForRequests(20))
            #expect(try await h.eventually {
                try h.db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0
            })
            #expect(try h.db.query("select count(*)::bigint from courier.completed_jobs").rows[0].decode(0, as: Int.self) == 0)
            #expect(try h.job(ids[0]) == nil, "a success leaves nothing to show")
            // The success attempts were still counted for the fleet's stats.
            #expect(try await h.eventually {
                try h.db.query("select coalesce(sum(attempts), 0)::bigint from courier.attempt_stats where class = 'success'")
                    .rows[0].decode(0, as: Int.self) == 20
            })
        }
    }

    @Test func aWorkerWaitsForMissingMigrationsAndStartsWhenTheyLand() async throws {
        try await WorkerHarness.with() { h in
            // As if this worker were rolled out before 'jobctl migrate' applied the newest migration.
            let newest = try #require(Migration.all.last)
            try h.db.query("delete from courier.schema_migrations where version = \(newest.version)")
            let id = try h.enqueue("/after-migrate")
            try h.start()
            #expect(try await h.eventually { h.worker.missingMigrations == [newest.name] })
            #expect(h.logLines.all.contains { $0.contains("lacks migrations") && $0.contains(newest.name) })
            // Two more claimer rounds (each a schema check) and still nothing claimed.
            #expect(await h.waitForRounds([ServiceName.claimer]))
            #expect(h.server.requestCount() == 0, "nothing is claimed while a migration is missing")
            #expect(try h.status(id) == .available)

            try h.db.query("insert into courier.schema_migrations (version, name) values (\(newest.version), \(newest.name))")
            _ = try await h.waitFor(id, .succeeded)
            #expect(h.worker.missingMigrations.isEmpty)
            #expect(h.logLines.all.contains { $0.contains("schema is up to date") })
        }
    }

    @Test func secretHeaderReferencesAreResolvedAtSendTime() async throws {
        try await WorkerHarness.with() { h in
            let id = try h.enqueue("/secret") { $0.headers = [("Authorization", .secret(name: "partner-token"))] }
            let stored = try h.db.query("select headers::text from courier.jobs where id = \(id)").rows[0].decode(0, as: String.self)
            #expect(stored.contains("partner-token") && !stored.contains("s3cr3t"), "only the reference is stored")
            try h.start()
            _ = try await h.waitFor(id, .succeeded)
            #expect(h.server.requests.first?.header("Authorization") == "s3cr3t")
            #expect(!h.logLines.all.joined().contains("s3cr3t"))
            // A secret this worker cannot resolve is its configuration's fault: the job goes back
            // for another worker, without using an attempt...
            let missing = try h.enqueue("/secret2") { $0.headers = [("Authorization", .secret(name: "nope"))] }
            #expect(try await h.eventually { try h.isHandedBack(missing) }, "\(String(describing: try? h.job(missing)))")
            #expect(h.worker.degradedReason == nil, "one job's refusals never make the worker degraded")
            #expect(try h.job(missing)?.refusal?.reason.contains("COURIER_SECRET_NOPE") == true, "the job says why it waits")
            // ...and ends as a permanent dead letter once its deadline would pass first.
            let doomed = try h.enqueue("/secret3") {
                $0.headers = [("Authorization", .secret(name: "nope"))]
                $0.deadline = Date().addingTimeInterval(20)
            }
            let dead = try await h.waitFor(doomed, .dead)
            #expect(dead.deadReason == "permanent")
            #expect(dead.errors.last?.message.contains("COURIER_SECRET_NOPE") == true)
            #expect(h.server.requestCount(path: "/secret2") == 0 && h.server.requestCount(path: "/secret3") == 0)
        }
    }

    @Test func notFoundIsPermanentAfterOneRequest() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.respond(status: 404, headers: [], body: "no"), forPath: "/gone")
            try h.start()
            let id = try h.enqueue("/gone")
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.deadReason == "permanent")
            #expect(dead.errors.map(\.errorClass) == ["client"])
            #expect(dead.errors.first?.status == 404)
            #expect(h.server.requestCount(path: "/gone") == 1)
        }
    }

    @Test func unauthorizedIsNeverRepeated() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.respond(status: 401, headers: [], body: ""), forPath: "/auth")
            try h.start()
            let id = try h.enqueue("/auth") { $0.method = "GET" }
            #expect(try await h.waitFor(id, .dead).deadReason == "permanent")
            // Two more claim and completion rounds, and no second request.
            #expect(await h.waitForRounds([ServiceName.claimer, ServiceName.completer]))
            #expect(h.server.requestCount(path: "/auth") == 1)
        }
    }

    @Test func serverErrorsAreRetriedUntilSuccess() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([.respond(status: 503, headers: [], body: ""), .respond(status: 500, headers: [], body: "")], forPath: "/flaky")
            try h.start()
            let id = try h.enqueue("/flaky")
            let done = try await h.waitFor(id, .succeeded)
            #expect(done.attempt == 3)
            #expect(done.errors.map(\.errorClass) == ["server", "server"])
            #expect(h.server.requestCount(path: "/flaky") == 3)
            let keys = Set(h.server.requests.compactMap { $0.header("Idempotency-Key") })
            #expect(keys.count == 1)
        }
    }

    @Test func retryAfterIsHonouredForTheWholeDestination() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([.respond(status: 503, headers: [("Retry-After", "2")], body: "")], forPath: "/busy")
            try h.start()
            let id = try h.enqueue("/busy")
            _ = try await h.waitFor(id, .succeeded, timeout: .seconds(15))
            let arrivals = h.server.requests.filter { $0.path == "/busy" }.map(\.arrivalNanos)
            #expect(arrivals.count == 2)
            if arrivals.count == 2 {
                #expect(arrivals[1] - arrivals[0] >= 1_950_000_000, "the retry must wait for Retry-After")
            }
            #expect(try h.job(id)?.errors.first?.errorClass == "throttled")
        }
    }

    @Test func htmlWhereJSONWasExpectedIsAnInvalidResponse() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.html200, forPath: "/portal")
            try h.start()
            let id = try h.enqueue("/portal") { $0.expectContentType = "application/json" }
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.deadReason == "invalid_response")
            #expect(dead.errors.first?.errorClass == "invalid_response")
            #expect(dead.errors.first?.message.contains("text/html") == true)
            #expect(h.server.requestCount(path: "/portal") == 1)
        }
    }

    @Test func aDroppedPostWithoutKeyIsAmbiguousAfterOneRequest() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.dropConnection, forPath: "/drop")
            try h.start()
            let id = try h.enqueue("/drop") { $0.idempotencyKey = .none }
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.deadReason == "ambiguous")
            #expect(dead.errors.map(\.errorClass) == ["connection_lost"])
            #expect(h.server.requestCount(path: "/drop") == 1)
        }
    }

    @Test func aDroppedPostWithKeyIsRetriedWithTheSameKey() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([.dropConnection, .dropConnection], forPath: "/drop")
            try h.start()
            let id = try h.enqueue("/drop") { $0.idempotencyKey = .custom("order-77") }
            let done = try await h.waitFor(id, .succeeded)
            #expect(done.attempt == 3)
            #expect(h.server.requests.filter { $0.path == "/drop" }.map { $0.header("Idempotency-Key") } == ["order-77", "order-77", "order-77"])
        }
    }

    @Test func aRefusedPortIsATransportError() async throws {
        try await WorkerHarness.with() { h in
            try h.start()
            var r = EnqueueRequest(url: FaultServer.refusedPortURL() + "/x")
            r.maxAttempts = 2
            r.idempotencyKey = .none
            let id = try JobsTable.enqueue(r, on: h.db)
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.deadReason == "exhausted", "never delivered, so safe to retry even without a key")
            #expect(dead.errors.map(\.errorClass) == ["transport", "transport"])
        }
    }

    @Test func aSlowAnswerPastTheTimeoutIsATimeout() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.slow(delay: .seconds(3), then: .json200), forPath: "/slow")
            try h.start()
            let id = try h.enqueue("/slow") { $0.timeoutMilliseconds = 300; $0.maxAttempts = 1; $0.method = "GET" }
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.errors.first?.errorClass == "timeout")
            #expect(dead.deadReason == "exhausted")
        }
    }

    @Test func aDeadlineThatTheNextAttemptWouldMissDeadLettersAtOnce() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.respond(status: 500, headers: [], body: ""), forPath: "/down")
            try h.start { $0.retryPolicy.backoff.base = .seconds(30); $0.retryPolicy.backoff.cap = .seconds(60) }
            let id = try h.enqueue("/down") { $0.deadline = Date().addingTimeInterval(10) }
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.deadReason == "deadline")
            #expect(h.server.requestCount(path: "/down") == 1)
        }
    }

    @Test func privateDestinationsAreRefusedByDefault() async throws {
        try await WorkerHarness.with() { h in
            try h.start(allowPrivateNetworks: false)
            // Another worker of the fleet may allow private networks: handed back, no attempt used,
            // counted and logged; two jobs do not make the worker degraded.
            let ip = try h.enqueue("/ssrf")
            var request = EnqueueRequest(url: "http://localhost:\(h.server.port)/ssrf")
            request.deadline = Date().addingTimeInterval(20)
            let localhost = try JobsTable.enqueue(request, on: h.db)
            #expect(try await h.eventually { try h.isHandedBack(ip) }, "\(String(describing: try? h.job(ip)))")
            #expect(h.worker.metrics.snapshot().refusedByConfiguration >= 1)
            #expect(h.worker.degradedReason == nil)
            #expect(h.logLines.all.contains { $0.contains("handed back for another worker") && $0.contains("job=\(ip) ") })
            // If no worker may send it before its deadline, it ends as a permanent dead letter.
            let dead = try await h.waitFor(localhost, .dead)
            #expect(dead.deadReason == "permanent")
            #expect(dead.errors.first?.message.contains("allow-private-networks") == true, "\(dead.errors)")
            #expect(h.server.requestCount() == 0)
        }
    }

    @Test func cancellingARunningJobAbortsItWithinASecond() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.slow(delay: .seconds(20), then: .json200), forPath: "/long")
            try h.start()
            let id = try h.enqueue("/long")
            #expect(try await h.waitForRequests(1, path: "/long", timeout: .seconds(30)))
            let started = ContinuousClock.now
            #expect(try JobsTable.cancel(ids: [id], on: h.db).first?.outcome == .cancelRequested)
            let dead = try await h.waitFor(id, .dead, timeout: .seconds(5))
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(dead.deadReason == "cancelled")
            #expect(dead.errors.last?.errorClass == "cancelled")
        }
    }

    @Test func gracefulShutdownLetsInFlightJobsFinishAndLeavesTheRestUntouched() async throws {
        try await WorkerHarness.with() { h in
            h.server.setDefaultBehavior(.slow(delay: .milliseconds(600), then: .json200))
            try h.start { $0.concurrency = 2 }
            let ids = try (0..<6).map { try h.enqueue("/j/\($0)") }
            #expect(try await h.waitForRequests(2, timeout: .seconds(30)))
            await h.stop()
            let statuses = try ids.map { try h.job($0) }
            let succeeded = statuses.filter { $0?.status == .succeeded }.count
            #expect(succeeded >= 2, "the in-flight jobs finish within the grace")
            for record in statuses where record?.status == .available {
                #expect(record?.attempt == 0, "jobs not started keep their attempts")
            }
            #expect(try h.db.query("select count(*)::bigint from courier.jobs where state = 'running'").rows[0].decode(0, as: Int.self) == 0)
            #expect(try WorkersTable.live(on: h.db).isEmpty, "the worker deregisters")
        }
    }

    @Test func jobsStillRunningAfterTheGraceAreAbortedAndHandedBack() async throws {
        try await WorkerHarness.with() { h in
            h.server.setDefaultBehavior(.slow(delay: .seconds(30), then: .json200))
            try h.start { $0.shutdownGrace = .milliseconds(300) }
            let keyed = try h.enqueue("/a")
            let unkeyed = try h.enqueue("/b") { $0.idempotencyKey = .none }
            #expect(try await h.waitForRequests(2, timeout: .seconds(30)))
            let stopStarted = ContinuousClock.now
            await h.stop()
            #expect(ContinuousClock.now - stopStarted < .seconds(8))
            let back = try #require(try h.job(keyed))
            #expect(back.status == .available)
            #expect(back.attempt == 1, "an aborted request counts as an attempt: it may have been sent")
            #expect(back.errors.last?.errorClass == "cancelled")
            #expect(try h.job(unkeyed)?.deadReason == "ambiguous")
        }
    }

    @Test func customKindsRunThroughTheSwiftAPI() async throws {
        struct Greeter: JobHandler {
            let seen: LogCapture
            func perform(_ job: ClaimedJob) async -> Classification {
                seen.append(job.argsJSON ?? "")
                if job.attempt < 2 {
                    return Classification(succeeded: false, errorClass: .transport, message: "mail server away",
                                          mayHaveBeenDelivered: false, retryable: true)
                }
                return .success()
            }
        }
        try await WorkerHarness.with() { h in
            let seen = LogCapture()
            try h.start(register: { $0.register(kind: "greet", handler: Greeter(seen: seen)) })
            let id = try h.db.query("select courier.enqueue_job('greet', '{\"name\": \"Ada\"}')").rows[0].decode(0, as: Int64.self)
            let done = try await h.waitFor(id, .succeeded)
            #expect(done.attempt == 2)
            #expect(seen.all.count == 2)
            #expect(seen.all.first?.contains("Ada") == true)
        }
    }
}
