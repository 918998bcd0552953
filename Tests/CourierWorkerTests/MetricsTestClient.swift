import CourierTestSupport
import Foundation

/// The metrics tests' names for the shared loopback client (CourierTestSupport/LoopbackHTTP.swift).
typealias MetricsTestConnection = LoopbackConnection

/// A parsed HTTP response, headers by lowercased name.
struct MetricsTestResponse {
    var status: Int
    var headers: [String: String]
    var body: String

    init(_ response: LoopbackResponse) {
        status = response.status
        headers = response.headerMap
        body = response.body
    }

    init(_ bytes: [UInt8]) throws { self.init(try LoopbackResponse(bytes)) }
}

enum MetricsTestClient {
    /// One request, answered and closed by the server.
    static func request(port: Int, _ method: String = "GET", _ path: String, timeout: Duration = .seconds(10)) throws -> MetricsTestResponse {
        MetricsTestResponse(try LoopbackHTTP.request(port: port, method, path, timeout: timeout))
    }

    /// Sends raw bytes and returns the answer (nil status when the server closed without one).
    static func raw(port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(10)) throws -> MetricsTestResponse? {
        try LoopbackHTTP.raw(port: port, bytes, timeout: timeout).map(MetricsTestResponse.init)
    }
}

struct MetricsTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
