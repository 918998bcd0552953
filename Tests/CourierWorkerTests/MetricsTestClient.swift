import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking loopback TCP client for poking the metrics server, including with
/// bytes no real client would send. Every read has a timeout so a test never hangs.
final class MetricsTestConnection: @unchecked Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw MetricsTestError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw MetricsTestError("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Sends all bytes; false when the peer has closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads until the server closes the connection. Nil when `timeout` passed first.
    func readToEnd(timeout: Duration = .seconds(10)) -> [UInt8]? {
        var received: [UInt8] = []
        let end = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now < end {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = max(1, Int32(min(1000, (end - ContinuousClock.now).components.seconds * 1000 + 1)))
            guard poll(&entry, 1, left) > 0 else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return received }  // closed (or reset): what arrived is the answer
            received += chunk[..<count]
        }
        return nil
    }

    /// True when the server closed the connection within `timeout` (reading and discarding).
    func isClosedByServer(within timeout: Duration) -> Bool { readToEnd(timeout: timeout) != nil }
}

/// A parsed HTTP response.
struct MetricsTestResponse {
    var status: Int
    var headers: [String: String]
    var body: String

    init(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw MetricsTestError("no complete response head in \(text.debugDescription)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else {
            throw MetricsTestError("bad status line \(lines[0].debugDescription)")
        }
        self.status = status
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw MetricsTestError("bad header line \(line.debugDescription)") }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
        self.body = String(text[split.upperBound...])
    }
}

enum MetricsTestClient {
    /// One request, answered and closed by the server.
    static func request(port: Int, _ method: String = "GET", _ path: String, timeout: Duration = .seconds(10)) throws -> MetricsTestResponse {
        let connection = try MetricsTestConnection(port: port)
        connection.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: courier-tests\r\n\r\n")
        guard let bytes = connection.readToEnd(timeout: timeout) else {
            throw MetricsTestError("\(method) \(path): no complete answer within \(timeout)")
        }
        return try MetricsTestResponse(bytes)
    }

    /// Sends raw bytes and returns the answer (nil status when the server closed without one).
    static func raw(port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(10)) throws -> MetricsTestResponse? {
        let connection = try MetricsTestConnection(port: port)
        connection.send(bytes)
        guard let answer = connection.readToEnd(timeout: timeout) else {
            throw MetricsTestError("no answer or close within \(timeout)")
        }
        return answer.isEmpty ? nil : try MetricsTestResponse(answer)
    }
}

struct MetricsTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
