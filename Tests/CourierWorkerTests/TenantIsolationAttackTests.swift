import CourierCore
import CourierHTTPServer
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// Issue 43: what one enqueuer can do to others, each attack performed for real against a
/// worker, the test database and a loopback server, and each now failing to do harm.
@Suite struct TenantIsolationAttackTests {
    /// Item 1: an enqueuer sends 30 jobs with `timeout_ms => 1` to a healthy partner that
    /// other tenants share. Each of them times out, and is the enqueuer's own failure; none
    /// of them is evidence against the partner, so its breaker never opens and the next
    /// tenant's job is sent at once.
    @Test func aJobsOwnTooShortTimeoutsDoNotOpenASharedPartnersBreaker() async throws {
        let h = try WorkerHarness()
        h.server.setBehavior(.slow(delay: .milliseconds(100), then: .json200), forPath: "/partner")
        try h.start()
        var attack: [Int64] = []
        for _ in 0..<30 {
            attack.append(try h.enqueue("/partner") { $0.timeoutMilliseconds = 1; $0.maxAttempts = 1 })
        }
        for id in attack {
            let dead = try await h.waitFor(id, .dead)
            #expect(dead.errors.last?.errorClass == "timeout", "the attack's own jobs still fail as timeouts")
        }
        let other = try h.enqueue("/partner")
        _ = try await h.waitFor(other, .succeeded)
        let destination = try #require(try h.job(other)?.destination)
        let opened = try h.db.query("""
            select count(*)::int from courier.breaker_events where destination = \(destination) and to_state = 'open'
            """).rows[0].decode(0, as: Int.self)
        #expect(opened == 0, "the partner's breaker opened on timeouts the jobs chose")
        await h.close()
    }

    /// Item 2: one job that this worker's configuration cannot run (a secret it lacks) used
    /// to make every worker that touched it not ready for 5 minutes. Now the worker stays
    /// ready and not degraded, the job says why it waits, and its refusals are bounded.
    @Test func oneJobThatNoWorkerMayRunNeitherUnreadiesTheWorkerNorWaitsForever() async throws {
        let h = try WorkerHarness()
        try h.start()
        let stuck = try h.enqueue("/needs-secret") { $0.headers = [("Authorization", .secret(name: "nowhere"))] }
        #expect(try await h.eventually { try h.isHandedBack(stuck) })
        #expect(WorkerEndpoint.readiness(h.worker.metricsState).status == 200, "one job's refusal never takes readiness away")
        #expect(h.worker.degradedReason == nil)
        let waiting = try #require(try h.job(stuck)?.refusal)
        #expect(waiting.count == 1 && waiting.reason.contains("COURIER_SECRET_NOWHERE"), "\(waiting)")
        // Other jobs run meanwhile.
        _ = try await h.waitFor(try h.enqueue("/fine"), .succeeded)

        // An hour of refusals: the next one ends it, saying no worker may run it and why.
        try h.db.query("""
            update courier.jobs set refused_since = now() - interval '61 minutes', run_at = now() where id = \(stuck)
            """)
        let dead = try await h.waitFor(stuck, .dead)
        #expect(dead.deadReason == "permanent")
        let message = try #require(dead.errors.last?.message)
        #expect(message.contains("no worker may run it") && message.contains("COURIER_SECRET_NOWHERE"), "\(message)")
        #expect(h.server.requestCount(path: "/needs-secret") == 0)

        // The set count ends a run too, and a run is counted per job in the database.
        let counted = try h.enqueue("/needs-secret") { $0.headers = [("Authorization", .secret(name: "nowhere"))] }
        #expect(try await h.eventually { try h.isHandedBack(counted) })
        try h.db.query("""
            update courier.jobs set refusals = \(LocalRefusal.maximumRefusals - 1), run_at = now() where id = \(counted)
            """)
        let ended = try await h.waitFor(counted, .dead)
        #expect(ended.errors.last?.message.contains("in \(LocalRefusal.maximumRefusals) tries") == true, "\(ended.errors)")
        await h.close()
    }

    /// Item 2, the other side: a worker that refuses many different jobs is degraded (a
    /// metric and a log line), and still ready, since it serves the jobs it can run.
    @Test func aWorkerThatRefusesManyJobsIsDegradedButReady() async throws {
        let h = try WorkerHarness()
        try h.start()
        var ids: [Int64] = []
        for _ in 0..<RefusalLedger.manyJobs {
            ids.append(try h.enqueue("/needs-secret") { $0.headers = [("Authorization", .secret(name: "nowhere"))] })
        }
        #expect(try await h.eventually { try ids.allSatisfy { try h.isHandedBack($0) } })
        let reason = try #require(h.worker.degradedReason)
        #expect(reason.contains("\(RefusalLedger.manyJobs) jobs refused"), "\(reason)")
        let readiness = WorkerEndpoint.readiness(h.worker.metricsState)
        #expect(readiness.status == 200)
        #expect(PrometheusText.workerPage(metrics: h.worker.metrics.snapshot(), state: h.worker.metricsState, sampling: .init()).contains("courier_worker_degraded 1"))
        await h.close()
    }
}
