import CourierCore
import CourierTestSupport
import Testing
@testable import CourierHTTP

/// Issue 18 items 4 and 5: the transport classifies by what libcurl saw of the exchange.
/// Loopback only.
@Suite("Hostile exchanges")
struct HostileExchangeTests {
    /// A garbage or HTTP/0.9 answer comes after the request was written: maybe delivered,
    /// never "refused to send" (which an operator would replay without a second thought).
    @Test(arguments: ["HELLO\r\n", "<html>not http</html>", "\u{1B}[2J\u{1B}[H"])
    func aNonHTTPAnswerIsMaybeDelivered(answer: String) async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.raw(bytes: Array(answer.utf8)), forPath: "/garbage")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/garbage", body: Array("{}".utf8)))

        #expect(server.requestCount(path: "/garbage") == 1, "the request did reach the server")
        guard case .connectionLost = outcome else {
            Issue.record("expected connectionLost (maybe delivered), got \(outcome)")
            return
        }
        #expect(OutcomeClassifier.classify(outcome, expectContentType: nil, now: .now).mayHaveBeenDelivered)
    }

    /// A request libcurl cannot build (a header of megabytes) is refused on this side:
    /// nothing reaches the server, and the outcome says so instead of "connection lost".
    @Test func aRequestTooLargeToBuildIsNotSent() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let huge = String(repeating: "a", count: 3 << 20)
        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/big",
                                                       headers: [HTTPHeader(name: "X-Big", value: huge)], body: [1]))

        #expect(server.requestCount(path: "/big") == 0)
        let classification = OutcomeClassifier.classify(outcome, expectContentType: nil, now: .now)
        #expect(!classification.mayHaveBeenDelivered, "got \(outcome)")
        #expect(!classification.countsAsBreakerFailure, "a healthy destination's breaker hears nothing: \(outcome)")
    }
}
