import CourierCore
import CourierTestSupport
import Testing
@testable import CourierHTTP

@Suite("SSRF guard")
struct SSRFGuardTests {
    @Test func loopbackAddressIsBlockedWithoutTheFlag() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(allowPrivateNetworks: false)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: server.baseURL + "/hook", body: [1]))

        #expect(outcome == .refusedByConfiguration("destination address 127.0.0.1 is loopback; pass --allow-private-networks to allow"))
        #expect(server.requestCount() == 0)
        #expect(server.connectionCount == 0)
    }

    @Test func localhostIsBlockedWithoutTheFlag() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(allowPrivateNetworks: false)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: "http://localhost:\(server.port)/hook"))

        let reason = try #require(outcome.blockedReason, "got \(outcome)")
        #expect(reason.contains("127.0.0.1") || reason.contains("::1"))
        #expect(reason.contains("loopback"))
        #expect(reason.contains("--allow-private-networks"))
        #expect(server.requestCount() == 0)
        #expect(server.connectionCount == 0)
    }

    @Test func loopbackAndLocalhostAreAllowedWithTheFlag() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(allowPrivateNetworks: true)
        defer { transport.shutdown() }

        let byAddress = await transport.send(HTTPRequest(url: server.baseURL + "/a"))
        let byName = await transport.send(HTTPRequest(url: "http://localhost:\(server.port)/b"))

        #expect(byAddress.response?.status == 200, "got \(byAddress)")
        #expect(byName.response?.status == 200, "got \(byName)")
        #expect(server.requestCount() == 2)
    }

    @Test func theGuardJudgesTheResolvedAddressNotTheName() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let seen = Collector<String>()
        let transport = try makeTransport(allowPrivateNetworks: false, addressGuard: { ip in
            seen.append(ip)
            return nil
        })
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: "http://localhost:\(server.port)/x"))

        #expect(outcome.response?.status == 200, "got \(outcome)")
        #expect(seen.values.contains("127.0.0.1"))
        #expect(!seen.values.contains("localhost"))
    }

    @Test func aCustomGuardsReasonIsReported() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(allowPrivateNetworks: false, addressGuard: { _ in "on the test deny list" })
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: server.baseURL + "/x"))

        #expect(outcome == .refusedByConfiguration("destination address 127.0.0.1 is on the test deny list; pass --allow-private-networks to allow"))
        #expect(server.requestCount() == 0)
    }

    @Test(arguments: ["ftp://127.0.0.1/file", "file:///etc/passwd", "gopher://127.0.0.1/", "127.0.0.1:80/x", "http:/x"])
    func nonHTTPURLsAreBlocked(url: String) async throws {
        let transport = try makeTransport(allowPrivateNetworks: true)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: url))

        let reason = try #require(outcome.blockedReason, "got \(outcome)")
        #expect(reason.contains("http"))
    }

    @Test func uppercaseSchemeIsAccepted() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: "HTTP://127.0.0.1:\(server.port)/up"))

        #expect(outcome.response?.status == 200, "got \(outcome)")
    }

    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("10.1.2.3", "private"),
        ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
        ("100.64.0.1", "private"), ("169.254.169.254", "link-local"), ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"), ("::1", "loopback"), ("::", "unspecified"), ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"), ("fe80::1", "link-local"), ("febf::1", "link-local"),
        ("fec0::1", "site-local"), ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"), ("64:ff9b::a9fe:a9fe", "link-local"),
        ("::127.0.0.1", "loopback"), ("garbage", "not a valid IP address"), ("", "not a valid IP address"),
    ])
    func defaultGuardRefuses(ip: String, category: String) {
        #expect(DefaultAddressGuard.refusal(for: ip) == category)
    }

    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "192.169.0.1", "100.63.255.255", "100.128.0.1",
        "169.253.1.1", "11.0.0.1", "126.255.255.255", "128.0.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8",
        "2606:4700::1111", "fbff::1", "fe00::1",
    ])
    func defaultGuardAllows(ip: String) {
        #expect(DefaultAddressGuard.refusal(for: ip) == nil)
    }
}
