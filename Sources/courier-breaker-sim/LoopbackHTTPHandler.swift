import CourierCore
import CourierStore
import CourierWorker
import Foundation
import Glibc

/// The simulator's `http` kind: one blocking HTTP/1.1 request per attempt to a
/// loopback `http://127.0.0.1:PORT/...` URL, classified by Courier's own
/// `OutcomeClassifier`. (The simulator does not link the libcurl transport; for a
/// breaker study only the status and the failure class matter.)
///
/// Blocking socket calls run on a private concurrent dispatch queue, never on
/// Swift's cooperative pool.
struct LoopbackHTTPHandler: JobHandler {
    static let queue = DispatchQueue(label: "courier-breaker-sim.http", attributes: .concurrent)

    func perform(_ job: ClaimedJob) async -> Classification {
        guard let url = job.url, let target = Target(url) else {
            return OutcomeClassifier.classify(.blocked("the simulator only sends to http://127.0.0.1:PORT"),
                                              expectContentType: nil, now: Date())
        }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<TransportOutcome, Never>) in
            Self.queue.async { continuation.resume(returning: Self.send(target, method: job.method, key: job.idempotencyKey)) }
        }
        return OutcomeClassifier.classify(outcome, expectContentType: job.expectContentType, now: Date())
    }

    struct Target {
        var port: UInt16
        var pathAndQuery: String

        init?(_ url: String) {
            guard let components = URLComponents(string: url), components.scheme == "http",
                  components.host == "127.0.0.1", let port = components.port, let p = UInt16(exactly: port) else { return nil }
            self.port = p
            let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            self.pathAndQuery = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        }
    }

    /// Sends one request and reads the response head (and a Content-Length body).
    static func send(_ target: Target, method: String, key: String?) -> TransportOutcome {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .notSent("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = target.port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return .notSent("connect: \(String(cString: strerror(errno)))") }

        var request = "\(method) \(target.pathAndQuery) HTTP/1.1\r\nHost: 127.0.0.1:\(target.port)\r\nConnection: close\r\n"
        if let key { request += "Idempotency-Key: \(key)\r\n" }
        request += "Content-Length: 0\r\n\r\n"
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return .connectionLost("write: \(String(cString: strerror(errno)))") }
            sent += n
        }

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if let end = headEnd, received.count >= end + contentLength { break }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return .timedOut(connected: true, "no answer within 5s") }
                return .connectionLost("read: \(String(cString: strerror(code)))")
            }
            if n == 0 { break }
            received += buffer[0..<n]
            if headEnd == nil, let end = Self.headEnd(received) {
                headEnd = end
                contentLength = Self.header("content-length", in: received[0..<end]).flatMap { Int($0) } ?? 0
            }
            if received.count > 1 << 20 { break }
        }
        guard let end = headEnd else { return .connectionLost("the connection closed before a response arrived") }
        let head = String(decoding: received[0..<end], as: UTF8.self)
        let statusLine = head.prefix { $0 != "\r" }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return .connectionLost("malformed status line") }
        var headers: [HTTPHeader] = []
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(HTTPHeader(name: String(line[..<colon]),
                                      value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return .response(HTTPResponseSummary(status: status, headers: headers, bodyPrefix: Array(received[end...].prefix(256))))
    }

    /// The index just past the blank line ending the head, if it has arrived.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    static func header(_ name: String, in head: ArraySlice<UInt8>) -> String? {
        for line in String(decoding: head, as: UTF8.self).split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name { return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }
}
