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

        #expect(outcome == .refusedByConfiguration("destination address 127.0.0.1 is in loopback 127.0.0.0/8; pass --allow-private-networks to allow"))
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

    /// The library's default guard is the one policy in CourierCore (`AddressPolicy`), the
    /// ranges the old separate guard lacked included. Judged as a pure function: no traffic.
    @Test(arguments: [
        "127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fc00::1", "2002:7f00:1::", "2002:a00:1::", "224.0.0.1",
        "ff02::1", "192.0.0.8", "198.18.0.1", "198.19.255.255", "240.0.0.1", "255.255.255.255", "64:ff9b:1::a00:1",
        "::ffff:0:a00:1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "garbage", "",
    ])
    func defaultGuardIsTheAddressPolicy(ip: String) throws {
        let category = try #require(CurlTransport.Configuration().addressGuard(ip), "\(ip) must be refused")
        #expect(category == AddressPolicy.refusalCategory(ip: ip))
    }

    @Test(arguments: ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "2002:808:808::1", "198.20.0.1", "64:ff9b::808:808"])
    func defaultGuardAllows(ip: String) {
        #expect(CurlTransport.Configuration().addressGuard(ip) == nil)
    }

    /// Issue 17/18: the refusal for an IPv4-mapped address read with the address twice.
    /// Loopback only: the guard refuses it before a socket is opened.
    @Test func anIPv4MappedLoopbackRefusalReadsOnce() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport(allowPrivateNetworks: false)
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: "http://[::ffff:127.0.0.1]:\(server.port)/x"))

        let reason = try #require(outcome.blockedReason, "got \(outcome)")
        #expect(reason == "destination address ::ffff:127.0.0.1 is IPv4-mapped 127.0.0.1, which is in loopback 127.0.0.0/8; pass --allow-private-networks to allow")
        #expect(server.connectionCount == 0)
    }

    /// Issue 43 item 8: the host's own interface addresses, read from the kernel, are
    /// refused by the default guard (a service bound to 0.0.0.0 answers on each of them),
    /// and the reading is cached, not repeated per connection.
    @Test func theHostsOwnAddressesAreReadAndRefusedByTheDefaultGuard() throws {
        let read = HostAddresses.read()
        #expect(read.contains(IPAddress("127.0.0.1")!), "getifaddrs found the loopback interface: \(read)")
        for address in read {
            let reason = HostAddresses.defaultGuard(address.description)
            #expect(reason != nil, "\(address) is this host's and must be refused")
        }
        let reader = HostAddresses()
        let start = ContinuousClock.now
        let first = reader.current(now: start)
        #expect(reader.current(now: start + .seconds(1)) == first)
        #expect(first == read)
        #expect(CurlTransport.Configuration().addressGuard("127.0.0.1") != nil, "the transport's default guard is this one")
    }
}
