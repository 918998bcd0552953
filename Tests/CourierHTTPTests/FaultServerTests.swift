import CourierTestSupport
import Foundation
import Glibc
import Testing

@Suite("FaultServer")
struct FaultServerTests {
    @Test func chunkedBodyIsDecodedAndRecorded() throws {
        let server = try FaultServer()
        defer { server.stop() }

        let reply = try RawClient.exchange(port: server.port, sending:
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

        let reply = try RawClient.exchange(port: server.port, sending:
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
        let reply = try RawClient.exchange(port: server.port, sending: "GET / HTTP/1.1\r\nX-Big: \(big)\r\n\r\n")

        #expect(reply.hasPrefix("HTTP/1.1 431 "))
        #expect(server.requestCount() == 0)
    }

    @Test func malformedRequestLineGets400() throws {
        let server = try FaultServer()
        defer { server.stop() }

        let reply = try RawClient.exchange(port: server.port, sending: "NONSENSE\r\n\r\n")

        #expect(reply.hasPrefix("HTTP/1.1 400 "))
        #expect(server.requestCount() == 0)
    }

    @Test func stopEndsDelayedAnswersAndRefusesNewConnections() throws {
        let server = try FaultServer(defaultBehavior: .slow(delay: .seconds(600), then: .json200))
        let port = server.port
        let fd = try RawClient.connect(port: port)
        defer { close(fd) }
        try RawClient.send(fd, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.waitForRequests(1))

        server.stop()

        #expect(RawClient.readAll(fd) == "")             // closed without an answer
        #expect(throws: RawClient.Failure.self) { try RawClient.connect(port: port) }
    }

    @Test func refusedPortURLRefusesConnections() throws {
        let url = FaultServer.refusedPortURL()
        let port = try #require(Int(url.split(separator: ":").last ?? ""))
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(throws: RawClient.Failure.self) { try RawClient.connect(port: port) }
    }
}

/// A minimal blocking TCP client for poking the server byte by byte.
enum RawClient {
    struct Failure: Error { let step: String }

    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(step: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw Failure(step: "connect")
        }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)   // guards against a hang only
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func send(_ fd: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(step: "send") }
            offset += n
        }
    }

    /// Reads until the server closes the connection.
    static func readAll(_ fd: Int32) -> String {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += chunk[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Sends `text` on a fresh connection and returns everything until the server closes it.
    static func exchange(port: Int, sending text: String) throws -> String {
        let fd = try connect(port: port)
        defer { close(fd) }
        try send(fd, text)
        return readAll(fd)
    }
}
