import CourierCore
import CourierStore
import CourierTestSupport
import CourierWorker
import Foundation
import Testing

/// Issue 17, retry semantics: a throttled answer (429 with Retry-After) uses no attempt
/// while the job has a deadline; without one it uses its attempt like any failure.
@Suite(.serialized) struct ThrottlingAttemptsTests {
    static let throttle = FaultServer.Behavior.respond(status: 429, headers: [("Retry-After", "1")], body: "")

    @Test func withADeadlineThrottlingUsesNoAttempt() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([Self.throttle, Self.throttle, Self.throttle], forPath: "/t")
            try h.start { $0.concurrency = 1 }
            let id = try h.enqueue("/t") {
                $0.maxAttempts = 2
                $0.deadline = Date().addingTimeInterval(120)
            }
            _ = try await h.waitFor(id, .succeeded, timeout: .seconds(60))
            #expect(h.server.requests.filter { $0.path == "/t" }.count == 4, "three throttled answers and a success, with max_attempts 2")
            let job = try #require(try h.job(id))
            #expect(job.attempt == 1, "the throttled answers used no attempt: \(job.attempt)")
            #expect(job.errors.filter { $0.errorClass == "throttled" }.count == 3, "every throttled answer is in the history")
        }
    }

    @Test func withoutADeadlineThrottlingUsesAttempts() async throws {
        try await WorkerHarness.with() { h in
            h.server.enqueueBehaviors([Self.throttle, Self.throttle, Self.throttle], forPath: "/t")
            try h.start { $0.concurrency = 1 }
            let id = try h.enqueue("/t") { $0.maxAttempts = 2 }
            _ = try await h.waitFor(id, .dead, timeout: .seconds(60))
            #expect(h.server.requests.filter { $0.path == "/t" }.count == 2)
            #expect(try h.job(id)?.deadReason == "exhausted")
        }
    }
}
