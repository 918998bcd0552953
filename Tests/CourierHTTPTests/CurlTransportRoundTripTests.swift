import CourierCore
import CourierTestSupport
import Testing
@testable import CourierHTTP

@Suite("CurlTransport round trips")
struct CurlTransportRoundTripTests {
    @Test func getArrivesWithHeadersAndResponseIsReported() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(
            method: "GET",
            url: server.baseURL + "/items?page=2",
            headers: [HTTPHeader(name: "Idempotency-Key", value: "key-123"), HTTPHeader(name: "X-Trace", value: "t1")]
        ))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.bodyText == FaultServer.jsonBody)
        #expect(response.bodyTruncated == false)
        let seen = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(seen.method == "GET")
        #expect(seen.path == "/items?page=2")
        #expect(seen.header("Idempotency-Key") == "key-123")
        #expect(seen.header("X-Trace") == "t1")
        #expect(seen.header("User-Agent") == "courier/0.1")
        #expect(seen.body.isEmpty)
    }

    @Test func postBodyArrivesIntactWithContentLengthAndNoExpect() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }
        // Large enough that curl would normally add "Expect: 100-continue"; binary, with NUL bytes.
        var body = Array(#"{"event":"paid","amount":42}"#.utf8)
        body += (0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }

        let outcome = await transport.send(HTTPRequest(
            method: "POST",
            url: server.baseURL + "/hook",
            headers: [HTTPHeader(name: "Idempotency-Key", value: "abc"), HTTPHeader(name: "Content-Type", value: "application/json")],
            body: body
        ))

        #expect(outcome.response?.status == 200, "got \(outcome)")
        let seen = try #require(server.requests.first)
        #expect(seen.method == "POST")
        #expect(seen.body == body)
        #expect(seen.header("Content-Length") == String(body.count))
        #expect(seen.header("Expect") == nil)
        #expect(seen.header("Transfer-Encoding") == nil)
        #expect(seen.header("Idempotency-Key") == "abc")
        #expect(seen.header("Content-Type") == "application/json")
    }

    @Test func postWithoutBodySendsContentLengthZero() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/empty"))

        #expect(outcome.response?.status == 200, "got \(outcome)")
        let seen = try #require(server.requests.first)
        #expect(seen.method == "POST")
        #expect(seen.header("Content-Length") == "0")
        #expect(seen.body.isEmpty)
    }

    @Test(arguments: ["PUT", "PATCH", "DELETE", "OPTIONS"])
    func customMethodsArriveAsWritten(method: String) async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }
        let body: [UInt8]? = method == "DELETE" || method == "OPTIONS" ? nil : Array("payload".utf8)

        let outcome = await transport.send(HTTPRequest(method: method, url: server.baseURL + "/r", body: body))

        #expect(outcome.response?.status == 200, "got \(outcome)")
        let seen = try #require(server.requests.first)
        #expect(seen.method == method)
        #expect(seen.body == (body ?? []))
    }

    @Test func headReturnsStatusAndHeadersWithoutBody() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "HEAD", url: server.baseURL + "/h"))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.status == 200)
        #expect(response.bodyPrefix.isEmpty)
        #expect(server.requests.first?.method == "HEAD")
    }

    @Test func emptyHeaderValueIsSentEmpty() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        _ = await transport.send(HTTPRequest(url: server.baseURL + "/", headers: [HTTPHeader(name: "X-Empty", value: "")]))

        #expect(server.requests.first?.header("X-Empty") == "")
    }

    @Test func serviceUnavailableWithRetryAfterIsAResponse() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.respond(status: 503, headers: [("Retry-After", "2")], body: "busy"), forPath: "/busy")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/busy", body: Array("x".utf8)))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "2")
        #expect(response.bodyText == "busy")
    }

    @Test func tooManyRequestsIsAResponse() async throws {
        let server = try FaultServer(defaultBehavior: .respond(status: 429, headers: [("Retry-After", "1")], body: ""))
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/"))

        #expect(outcome.response?.status == 429, "got \(outcome)")
        #expect(outcome.response?.header("retry-after") == "1")
    }

    @Test func htmlWithStatus200ShowsItsContentType() async throws {
        let server = try FaultServer(defaultBehavior: .html200)
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/api"))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/html; charset=utf-8")
        #expect(response.bodyText.hasPrefix("<!DOCTYPE html>"))
    }

    @Test func redirectsAreNotFollowed() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.respond(status: 302, headers: [("Location", "/elsewhere")], body: ""), forPath: "/moved")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/moved"))

        #expect(outcome.response?.status == 302, "got \(outcome)")
        #expect(outcome.response?.header("Location") == "/elsewhere")
        #expect(server.requestCount(path: "/elsewhere") == 0)
    }

    @Test func scriptedBehavioursRunInOrderThenFallBack() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let unavailable = FaultServer.Behavior.respond(status: 503, headers: [], body: "")
        server.enqueueBehaviors([unavailable, unavailable], forPath: "/flaky")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        var statuses: [Int] = []
        for _ in 0..<3 {
            statuses.append(await transport.send(HTTPRequest(url: server.baseURL + "/flaky?attempt")).response?.status ?? -1)
        }

        #expect(statuses == [503, 503, 200])
        #expect(server.requestCount(path: "/flaky") == 3)
    }
}
