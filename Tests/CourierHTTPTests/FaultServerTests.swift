import CourierTestSupport
import Foundation
import Glibc
import Testing

@Suite("FaultServer")
struct FaultServerTests {
    @Test func chunkedBodyIsDecodedAndRecorded() throws {
        let server = try FaultServer()
        defer { server.stop() }

        let reply = try LoopbackHTTP.exchange(port: server.port, sending:
            "POST /chunked?q=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
            "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")

        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(reply.hasSuffix(FaultServer.jsonBody))
        let seen = try #require(server.requests.first)
        #expect(seen.bodyText == "hello world")
        #expect(seen.path == "/chunked?q=1")
        #expect(server.requestCount(path: "/chunked") == 1)
    }

    @Test func pipelinedRequestsOnOneConnectionAreAllAnswered() throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setBehavior(.respond(status: 404, headers: [("X-A", "1")], body: "no"), forPath: "/missing")

        let reply = try LoopbackHTTP.exchange(port: server.port, sending:
            "GET /a HTTP/1.1\r\nHost: x\r\n\r\n" +
            "POST /missing HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
            "GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

        #expect(reply.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
        #expect(reply.contains("HTTP/1.1 404 Not Found\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nno"))
        #expect(server.requests.map(\.path) == ["/a", "/missing", "/last"])
        #expect(server.requests[1].bodyText == "abc")
        #expect(server.connectionCount == 1)
        #expect(server.waitForRequests(3, timeout: .seconds(1)))
    }

    @Test func oversizedHeadIsRefusedWith431() throws {
        let server = try FaultServer()
        defer { server.stop() }

        let big = String(repeating: "a", count: FaultServer.maxHeadBytes + 10)
        let reply = try LoopbackHTTP.exchange(port: server.port, sending: "GET / HTTP/1.1\r\nX-Big: \(big)\r\n\r\n")

        #expect(reply.hasPrefix("HTTP/1.1 431 "))
        #expect(server.requestCount() == 0)
    }

    @Test func malformedRequestLineGets400() throws {
        let server = try FaultServer()
        defer { server.stop() }

        let reply = try LoopbackHTTP.exchange(port: server.port, sending: "NONSENSE\r\n\r\n")

        #expect(reply.hasPrefix("HTTP/1.1 400 "))
        #expect(server.requestCount() == 0)
    }

    @Test func stopEndsDelayedAnswersAndRefusesNewConnections() throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(600), then: .json200))
        let port = server.port
        let connection = try LoopbackConnection(port: port)
        try connection.sendOrThrow("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.waitForRequests(1))

        server.stop()

        #expect(connection.readTextToEnd() == "")             // closed without an answer
        #expect(throws: LoopbackConnection.Failure.self) { try LoopbackConnection(port: port) }
    }

    @Test func refusedPortURLRefusesConnections() throws {
        let url = FaultServer.refusedPortURL()
        let port = try #require(Int(url.split(separator: ":").last ?? ""))
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(throws: LoopbackConnection.Failure.self) { try LoopbackConnection(port: port) }
    }
}
