import CourierCore
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Postgres
import Testing

@Suite(.serialized) struct RetryPolicyEndToEndTests {
    @Test func retryAfterHoldsTheWholeDestinationWithoutUsingAttempts() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([.respond(status: 429, headers: [("Retry-After", "2")], body: "")], forPath: "/first")
            try h.start { $0.concurrency = 1 }
            let first = try h.enqueue("/first")
            #expect(try await h.waitForRequests(1, path: "/first", timeout: .seconds(30)))
            // A job for the same destination enqueued after the 429 waits for the pause too.
            // The 429 is recorded (the first job is back in the queue) before the second arrives.
            #expect(try await h.eventually { try h.status(first) == .available })
            let second = try h.enqueue("/second")
            _ = try await h.waitFor(second, .succeeded, timeout: .seconds(15))
            _ = try await h.waitFor(first, .succeeded, timeout: .seconds(15))
            let requests = h.server.requests
            let throttledAt = try #require(requests.first { $0.path == "/first" }).arrivalNanos
            let secondAt = try #require(requests.first { $0.path == "/second" }).arrivalNanos
            #expect(secondAt - throttledAt >= 1_900_000_000, "the destination's other jobs wait for Retry-After")
            #expect(try h.job(second)?.attempt == 1, "waiting for the destination used no attempt")
            let breaker = try BreakersTable.list(destination: "http://127.0.0.1:\(h.server.port)", on: h.db)
            #expect(breaker.first?.state == "closed", "throttling is not a breaker failure")
        }
    }

    @Test func perQueueSettingsInTheDatabaseOverrideTheFlags() async throws {
        try await WorkerHarness.with() { h in
            try QueueSettingsTable.upsert(.init(queue: "slow-retries", backoff: "constant", backoffBaseMilliseconds: 1500, backoffCapMilliseconds: 10_000,
                                                jitter: "none"), on: h.db)
            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "")], forPath: "/q")
            h.server.enqueueBehaviors([.respond(status: 500, headers: [], body: "")], forPath: "/d")
            try h.start { $0.queues = ["slow-retries", "default"] }
            let slow = try h.enqueue("/q") { $0.queue = "slow-retries" }
            let fast = try h.enqueue("/d")
            _ = try await h.waitFor(fast, .succeeded)
            _ = try await h.waitFor(slow, .succeeded)
            func gap(_ path: String) -> UInt64 {
                let arrivals = h.server.requests.filter { $0.path == path }.map(\.arrivalNanos)
                return arrivals.count == 2 ? arrivals[1] - arrivals[0] : 0
            }
            #expect(gap("/q") >= 1_450_000_000, "constant 1.5s from courier.queue_settings")
            #expect(gap("/d") > 0 && gap("/d") < 1_400_000_000, "the default queue keeps the flags' 50ms base")
        }
    }

    @Test func attemptsRetriesAndDelaysAreRecordedFleetWide() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([.respond(status: 503, headers: [], body: ""), .dropConnection], forPath: "/m")
            h.server.setBehavior(.respond(status: 404, headers: [], body: ""), forPath: "/gone")
            try h.start()
            let retried = try h.enqueue("/m")
            let gone = try h.enqueue("/gone")
            let fine = try h.enqueue("/ok")
            _ = try await h.waitFor(retried, .succeeded)
            _ = try await h.waitFor(gone, .dead)
            _ = try await h.waitFor(fine, .succeeded)
            await h.stop()   // flushes the counters
            let summaries = try AttemptStatsTable.summaries(lastSeconds: 3600, by: .queue, on: h.db)
            let queue = try #require(summaries.first { $0.group == "default" })
            #expect(queue.attemptsByClass["server"] == 1)
            #expect(queue.attemptsByClass["connection_lost"] == 1)
            #expect(queue.attemptsByClass["client"] == 1)
            #expect(queue.attemptsByClass["success"] == 2)
            #expect(queue.retries == 2)
            #expect(queue.succeeded == 2)
            #expect(queue.succeededAfterRetry == 1)
            #expect(queue.retryDelayHistogram["le_1s"] == 2, "both retries waited at most the 200ms cap")
            #expect(queue.retryDelayHistogram["le_inf"] == 2)
            let byDestination = try AttemptStatsTable.summaries(lastSeconds: 86_400, by: .destination, on: h.db)
            #expect(byDestination.map(\.group) == ["http://127.0.0.1:\(h.server.port)"])
        }
    }

    @Test func liveWorkersAreListedWithTheJobsTheyHold() async throws {
        try await WorkerHarness.with() { h in
            h.server.setBehavior(.slow(delay: .seconds(2), then: .json200), forPath: "/hold")
            try h.start()
            let id = try h.enqueue("/hold")
            #expect(try await h.waitForRequests(1, path: "/hold", timeout: .seconds(30)))
            let workers = try WorkersTable.live(on: h.db)
            #expect(workers.count == 1)
            #expect(workers.first?.jobs == [id])
            #expect(workers.first?.pid == Int(getpid()))
            #expect(workers.first?.id == h.worker.id.uuidString.lowercased())
            _ = try await h.waitFor(id, .succeeded)
            await h.stop()
            #expect(try WorkersTable.live(on: h.db).isEmpty)
        }
    }

    @Test func succeededJobsArePrunedAfterTheRetention() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let worker = UUID()
            let id = try JobsTable.enqueue(EnqueueRequest(url: "https://example.com/x"), on: db)
            let job = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db).first)
            try JobsTable.complete([.init(id: id, attempt: job.attempt, lease: job.lease, status: 200, durationMilliseconds: 3)], worker: worker, on: db)
            #expect(try JobsTable.pruneCompleted(olderThanMilliseconds: 60_000, on: db) == 0)
            #expect(try JobsTable.get(id: id, on: db)?.status == .succeeded)
            #expect(try JobsTable.pruneCompleted(olderThanMilliseconds: 60_000, now: Date().addingTimeInterval(120), on: db) == 1)
            #expect(try JobsTable.get(id: id, on: db) == nil)
        }
    }
}
