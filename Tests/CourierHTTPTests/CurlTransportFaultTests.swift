import CourierCore
import CourierTestSupport
import Testing
@testable import CourierHTTP

@Suite("CurlTransport faults")
struct CurlTransportFaultTests {
    @Test func refusedPortIsNotSent() async throws {
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: FaultServer.refusedPortURL() + "/x", body: [1]))

        guard case .notSent(let message) = outcome else {
            Issue.record("expected notSent, got \(outcome)")
            return
        }
        #expect(message.contains("connect"))
    }

    @Test func unresolvableHostIsNotSent() async throws {
        let transport = try makeTransport()
        defer { transport.shutdown() }

        // .invalid never resolves (RFC 6761); the resolver answers locally.
        let outcome = await transport.send(HTTPRequest(url: "http://courier-test.invalid/"))

        guard case .notSent = outcome else {
            Issue.record("expected notSent, got \(outcome)")
            return
        }
    }

    @Test func droppedConnectionAfterRequestIsConnectionLost() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.dropConnection, forPath: "/drop")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/drop", body: Array("{}".utf8)))

        guard case .connectionLost = outcome else {
            Issue.record("expected connectionLost, got \(outcome)")
            return
        }
        #expect(server.requestCount(path: "/drop") == 1)
    }

    @Test func droppedReusedConnectionIsNotSilentlyResent() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.dropConnection, forPath: "/drop")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let warm = await transport.send(HTTPRequest(url: server.baseURL + "/warm"))
        #expect(warm.response?.status == 200)
        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/drop", body: Array("{}".utf8)))

        guard case .connectionLost = outcome else {
            Issue.record("expected connectionLost, got \(outcome)")
            return
        }
        // libcurl would resend a request that died on a reused connection; a POST must reach the server once.
        #expect(server.requestCount(path: "/drop") == 1)
        let drop = try #require(server.requests.first { $0.path == "/drop" })
        let warmed = try #require(server.requests.first { $0.path == "/warm" })
        #expect(drop.connectionID == warmed.connectionID, "the POST should have used the kept-alive connection")
    }

    @Test func slowAnswerPastTimeoutIsTimedOutAfterConnecting() async throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(30), then: .json200))
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/slow", timeout: .milliseconds(300)))

        guard case .timedOut(let connected, _) = outcome else {
            Issue.record("expected timedOut, got \(outcome)")
            return
        }
        #expect(connected)
        #expect(server.requestCount() == 1)
    }

    @Test func hugeBodyIsTruncatedAtTheCap() async throws {
        let server = try FaultServer(defaultBehavior: .hugeBody(bytes: 8 << 20))
        defer { server.stop() }
        let transport = try makeTransport(maxResponseBodyBytes: 1000)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/big"))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.status == 200)
        #expect(response.bodyTruncated)
        #expect(response.bodyPrefix == Array(repeating: UInt8(ascii: "x"), count: 1000))
        #expect(response.header("Content-Length") == String(8 << 20))
    }

    @Test func bodyExactlyAtTheCapIsNotTruncated() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(maxResponseBodyBytes: FaultServer.jsonBody.utf8.count)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/"))

        let response = try #require(outcome.response, "got \(outcome)")
        #expect(response.bodyTruncated == false)
        #expect(response.bodyText == FaultServer.jsonBody)
    }

    @Test func twoHundredConcurrentRequestsAllComplete() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let statuses = await withTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    await transport.send(HTTPRequest(
                        method: "POST", url: server.baseURL + "/c/\(i)", body: Array("\(i)".utf8)
                    )).response?.status ?? -1
                }
            }
            var all: [Int] = []
            for await status in group { all.append(status) }
            return all
        }

        #expect(statuses.count == 200)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(server.requestCount() == 200)
        #expect(Set(server.requests.map(\.bodyText)) == Set((0..<200).map { "\($0)" }))
    }

    /// With two driver threads too: a request goes to the less busy thread, the first on a
    /// tie, so requests one at a time all go to the first and its connection.
    @Test func sequentialRequestsReuseTheConnection() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(driverThreads: 2)
        defer { transport.shutdown() }

        for i in 0..<20 {
            let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/k", body: Array("\(i)".utf8)))
            #expect(outcome.response?.status == 200)
        }

        #expect(server.requestCount() == 20)
        #expect(server.connectionCount < 20)
        #expect(server.connectionCount == 1)
    }

    @Test func cancellingTheTaskAbortsAnInFlightRequest() async throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(60), then: .json200))
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let task = Task { await transport.send(HTTPRequest(url: server.baseURL + "/slow", timeout: .seconds(120))) }
        #expect(await eventually { server.requestCount() == 1 })
        task.cancel()
        let outcome = await task.value

        #expect(outcome == .cancelled(maybeSent: true))
    }

    @Test func aCancelledTaskSendsNothing() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await transport.send(HTTPRequest(url: server.baseURL + "/never"))
        }
        let outcome = await task.value

        #expect(outcome == .cancelled(maybeSent: false))
        #expect(server.requestCount() == 0)
    }

    @Test func shutdownAnswersPendingRequests() async throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(60), then: .json200))
        defer { server.stop() }
        // One connection per host: the second request waits for the first and is never sent.
        let transport = try makeTransport(maxHostConnections: 1)

        let inFlight = Task { await transport.send(HTTPRequest(url: server.baseURL + "/a", timeout: .seconds(120))) }
        #expect(await eventually { server.requestCount() == 1 })
        let waiting = Task { await transport.send(HTTPRequest(url: server.baseURL + "/b", timeout: .seconds(120))) }
        transport.shutdown()

        #expect(await inFlight.value == .cancelled(maybeSent: true))
        #expect(await waiting.value == .cancelled(maybeSent: false))
        #expect(await transport.send(HTTPRequest(url: server.baseURL + "/c")) == .cancelled(maybeSent: false))
        #expect(server.requestCount(path: "/b") == 0)
        #expect(server.requestCount(path: "/c") == 0)
        transport.shutdown()   // idempotent
    }
}
