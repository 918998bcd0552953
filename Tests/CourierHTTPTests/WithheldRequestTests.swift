import CourierCore
import CourierTestSupport
import Foundation
import Testing
@testable import CourierHTTP

/// `HTTPRequest.mayStillSend` is asked once, when a connection is ready and just before the
/// request is written; a `false` sends nothing and reports `.withheld`.
@Suite("Withheld requests")
struct WithheldRequestTests {
    @Test func aRequestWhoseCheckSaysNoIsNotWritten() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }
        let asked = Locked(0)
        var request = HTTPRequest(method: "POST", url: server.baseURL + "/hook", body: Array("{}".utf8))
        request.mayStillSend = { asked.withLock { $0 += 1 }; return false }

        let outcome = await transport.send(request)

        guard case .withheld = outcome else {
            Issue.record("expected withheld, got \(outcome)")
            return
        }
        #expect(asked.withLock { $0 } == 1)
        #expect(server.requestCount() == 0, "nothing of a withheld request reaches the server")
        let classification = OutcomeClassifier.classify(outcome, expectContentType: nil, now: Date())
        #expect(classification.withheld)
        #expect(!classification.mayHaveBeenDelivered)
        #expect(!classification.countsAsBreakerFailure, "a withheld request says nothing about the destination")
    }

    @Test func aRequestWhoseCheckSaysYesIsSent() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }
        var request = HTTPRequest(url: server.baseURL + "/ok")
        request.mayStillSend = { true }

        let outcome = await transport.send(request)

        #expect(outcome.response?.status == 200)
        #expect(server.requestCount(path: "/ok") == 1)
    }

    /// The check runs when the request's turn comes, not when it was handed over: a request
    /// that waited for a connection to its host sees what changed while it waited.
    @Test func aRequestWaitingForAConnectionIsAskedWhenItsTurnComes() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.holdUntilReleased(then: .json200), forPath: "/first")
        let transport = try makeTransport(maxHostConnections: 1)
        defer { transport.shutdown() }
        let allowed = Locked(true)

        async let first = transport.send(HTTPRequest(url: server.baseURL + "/first"))
        #expect(await eventually { server.requestCount(path: "/first") == 1 }, "the first request holds the one connection")
        var second = HTTPRequest(method: "POST", url: server.baseURL + "/second", body: Array("{}".utf8))
        second.mayStillSend = { allowed.withLock { $0 } }
        async let secondOutcome = transport.send(second)
        // While the second waits for the connection, its sender changes its mind; then the connection frees.
        try await Task.sleep(for: .milliseconds(100))   // a measured window: libcurl has queued the second (no event shows it)
        allowed.withLock { $0 = false }
        server.releaseHolds()

        #expect(await first.response?.status == 200)
        let outcome = await secondOutcome
        guard case .withheld = outcome else {
            Issue.record("expected withheld, got \(outcome)")
            return
        }
        #expect(server.requestCount(path: "/second") == 0)
    }
}
