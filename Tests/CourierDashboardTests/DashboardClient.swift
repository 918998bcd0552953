import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking loopback HTTP/1.1 client for the dashboard tests: one request per
/// connection (the server closes each), every read with a timeout.
struct DashboardClient {
    let port: Int
    var host: String

    init(port: Int) {
        self.port = port
        self.host = "127.0.0.1:\(port)"
    }

    struct Answer {
        var status: Int
        var headers: [(String, String)]
        var body: String

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        func headers(_ name: String) -> [String] { headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    func get(_ path: String, headers: [(String, String)] = []) throws -> Answer {
        try send("GET", path, headers: headers)
    }

    /// A form POST (`application/x-www-form-urlencoded`).
    func post(_ path: String, form: [(String, String)] = [], headers: [(String, String)] = []) throws -> Answer {
        let body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try send("POST", path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")], body: body)
    }

    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: String = "") throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect to 127.0.0.1:\(port) failed") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method == "POST" { head += "Content-Length: \(body.utf8.count)\r\n" }
        let bytes = Array((head + "\r\n" + body).utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send failed") }
            offset += sent
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        let end = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < end {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1000) > 0 else { continue }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            received += chunk[..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no complete answer: \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else { throw Failure(description: "bad status line in \(text)") }
        let fields = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return Answer(status: status, headers: fields, body: String(text[split.upperBound...]))
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    /// The CSRF token a page carries in its `<meta name="csrf-token">`.
    static func csrf(in page: String) -> String? {
        guard let range = page.range(of: "<meta name=\"csrf-token\" content=\"") else { return nil }
        return String(page[range.upperBound...].prefix { $0 != "\"" })
    }
}
