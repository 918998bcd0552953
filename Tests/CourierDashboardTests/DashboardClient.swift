import CourierTestSupport
import Foundation

/// A blocking loopback HTTP/1.1 client for the dashboard tests: one request per
/// connection (the server closes each), every read with a timeout.
struct DashboardClient {
    let port: Int
    var host: String

    init(port: Int) {
        self.port = port
        self.host = "127.0.0.1:\(port)"
    }

    /// A parsed answer (the shared loopback client's response).
    typealias Answer = LoopbackResponse

    func get(_ path: String, headers: [(String, String)] = []) throws -> Answer {
        try send("GET", path, headers: headers)
    }

    /// A form POST (`application/x-www-form-urlencoded`).
    func post(_ path: String, form: [(String, String)] = [], headers: [(String, String)] = []) throws -> Answer {
        let body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        return try send("POST", path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")], body: body)
    }

    /// One request through CourierTestSupport's LoopbackHTTP (one connection, closed by the server).
    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: String = "") throws -> Answer {
        try LoopbackHTTP.request(port: port, method, path, host: host, headers: headers, body: body, timeout: .seconds(30))
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
