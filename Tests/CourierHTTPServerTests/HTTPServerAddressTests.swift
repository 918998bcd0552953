import CourierCore
import CourierHTTPServer
import CourierTestSupport
import Foundation
import Testing

/// What the server reports about its own end and each client's: the numeric address
/// bound (for honest banners) and the peer (for per-client limits and logs).
@Suite struct HTTPServerAddressTests {
    @Test func theBoundAddressIsWhatTheKernelBound() throws {
        let everywhere = HTTPServer(address: HTTPServerAddress(host: nil, port: 0)) { _ in .init(status: 200, text: "") }
        #expect(everywhere.boundAddress == nil, "nothing before start")
        try everywhere.start()
        defer { everywhere.stop() }
        #expect(everywhere.boundAddress == HTTPServerAddress(host: "0.0.0.0", port: everywhere.port), ":0 binds every IPv4 address")
        let named = HTTPServer(address: HTTPServerAddress(host: "localhost", port: 0)) { _ in .init(status: 200, text: "") }
        try named.start()
        defer { named.stop() }
        let host = try #require(named.boundAddress?.host)
        #expect(IPAddress(host)?.isLoopback == true, "a name is shown as the address it resolved to: \(host)")
    }

    @Test func eachRequestCarriesItsPeersAddress() throws {
        let server = HTTPServer(address: HTTPServerAddress(host: "127.0.0.1", port: 0)) { request in
            .init(status: 200, text: request.peer ?? "none")
        }
        try server.start()
        defer { server.stop() }
        #expect(try LoopbackHTTP.request(port: server.port, "GET", "/").body == "127.0.0.1")
    }

    @Test func loopbackAddresses() {
        for text in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] { #expect(IPAddress(text)?.isLoopback == true, "\(text)") }
        for text in ["0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "::2", "::ffff:10.0.0.1", "2001:db8::1"] {
            #expect(IPAddress(text)?.isLoopback == false, "\(text)")
        }
    }
}
