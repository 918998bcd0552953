import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The tests' one socket HTTP client: a blocking loopback TCP connection that can send
/// bytes no real client would (half a head, pipelined requests, garbage), and reads
/// with a timeout so a test never hangs. ``LoopbackHTTP/request(port:_:_:headers:body:timeout:)``
/// is the one-request-per-connection form most tests want.
public final class LoopbackConnection: @unchecked Sendable {
    public let fd: Int32

    /// A connection failed to open, or a send failed (`step` says which).
    public struct Failure: Error, CustomStringConvertible {
        public let step: String
        public var description: String
        init(_ step: String, _ detail: String) {
            self.step = step
            self.description = "\(step): \(detail)"
        }
    }

    /// Connects to 127.0.0.1:`port`; throws ``Failure`` when nothing listens there.
    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket", String(cString: strerror(errno))) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure("connect", "127.0.0.1:\(port): \(reason)")
        }
    }

    deinit { close(fd) }

    /// Sends all bytes; false when the peer has closed the connection.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
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
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Sends all of `text` or throws (for tests where a failed send is the failure).
    public func sendOrThrow(_ text: String) throws {
        guard send(text) else { throw Failure("send", String(cString: strerror(errno))) }
    }

    /// Reads until the server closes the connection (or resets it: what arrived is the
    /// answer). Nil when `timeout` passed first.
    public func readToEnd(timeout: Duration = .seconds(10)) -> [UInt8]? {
        var received: [UInt8] = []
        let end = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 65536)
        while ContinuousClock.now < end {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = max(1, Int32(min(1000, (end - ContinuousClock.now).components.seconds * 1000 + 1)))
            guard poll(&entry, 1, left) > 0 else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return received }
            received += chunk[..<count]
        }
        return nil
    }

    /// ``readToEnd(timeout:)`` as text; what arrived so far when the timeout passed.
    public func readTextToEnd(timeout: Duration = .seconds(20)) -> String {
        String(decoding: readToEnd(timeout: timeout) ?? [], as: UTF8.self)
    }

    /// True when the server closed the connection within `timeout` (reading and discarding).
    public func isClosedByServer(within timeout: Duration) -> Bool { readToEnd(timeout: timeout) != nil }
}

/// A parsed HTTP/1.1 response: status, headers in order (names as sent), body.
public struct LoopbackResponse: Sendable {
    public var status: Int
    public var headerFields: [(String, String)]
    public var body: String

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headerFields.first { $0.0.lowercased() == name.lowercased() }?.1 }
    /// Every value of header `name` (case-insensitive), in order.
    public func headers(_ name: String) -> [String] { headerFields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
    /// The headers by lowercased name (the last value wins).
    public var headerMap: [String: String] {
        headerFields.reduce(into: [:]) { $0[$1.0.lowercased()] = $1.1 }
    }

    /// Parses a whole response; throws ``LoopbackHTTP/Failure`` on a malformed head.
    public init(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else {
            throw LoopbackHTTP.Failure("no complete response head in \(text.debugDescription)")
        }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else {
            throw LoopbackHTTP.Failure("bad status line \(lines[0].debugDescription)")
        }
        self.status = status
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw LoopbackHTTP.Failure("bad header line \(line.debugDescription)") }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        self.headerFields = fields
        self.body = String(text[split.upperBound...])
    }
}

/// One request per connection, answered and closed by the server.
public enum LoopbackHTTP {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Sends `method path` with `headers` (plus `Host`, and `Content-Length` when there is
    /// a body or the method is POST) and parses the answer.
    public static func request(port: Int, _ method: String = "GET", _ path: String, host: String = "127.0.0.1",
                               headers: [(String, String)] = [("User-Agent", "courier-tests")], body: String = "",
                               timeout: Duration = .seconds(10)) throws -> LoopbackResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method == "POST" || !body.isEmpty { head += "Content-Length: \(body.utf8.count)\r\n" }
        guard let response = try raw(port: port, Array((head + "\r\n" + body).utf8), timeout: timeout) else {
            throw Failure("\(method) \(path): closed without an answer")
        }
        return response
    }

    /// Sends raw bytes on a fresh connection and parses the answer (nil when the server
    /// closed without one); throws when neither an answer nor a close came within `timeout`.
    public static func raw(port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(10)) throws -> LoopbackResponse? {
        let connection = try LoopbackConnection(port: port)
        connection.send(bytes)
        guard let answer = connection.readToEnd(timeout: timeout) else {
            throw Failure("no answer or close within \(timeout)")
        }
        return answer.isEmpty ? nil : try LoopbackResponse(answer)
    }

    /// Sends `text` on a fresh connection and returns everything until the server closes it.
    public static func exchange(port: Int, sending text: String, timeout: Duration = .seconds(20)) throws -> String {
        let connection = try LoopbackConnection(port: port)
        try connection.sendOrThrow(text)
        return connection.readTextToEnd(timeout: timeout)
    }
}
