import CourierCore
import CourierTestSupport
import Testing
@testable import CourierHTTP

@Suite("Driver threads and their shares of the connection limits")
struct DriverSharesTests {
    private func limits(threads: Int, host: Int, total: Int = 0, cached: Int = 256) -> [CurlTransport.Configuration] {
        DriverShares(CurlTransport.Configuration(
            maxHostConnections: host, maxTotalConnections: total, maxCachedConnections: cached, driverThreads: threads)).configurations
    }

    @Test(arguments: [(128, 2), (5, 2), (7, 3), (3, 3), (1000, 7), (2, 1)])
    func sharesAddUpToEachLimitAndDifferByAtMostOne(limit: Int, threads: Int) {
        let shares = limits(threads: threads, host: limit, total: limit + 1, cached: limit + 2)
        #expect(shares.count == threads)
        #expect(shares.map(\.maxHostConnections).reduce(0, +) == limit)
        #expect(shares.map(\.maxTotalConnections).reduce(0, +) == limit + 1)
        #expect(shares.map(\.maxCachedConnections).reduce(0, +) == limit + 2)
        let host = shares.map(\.maxHostConnections)
        #expect(host.max()! - host.min()! <= 1)
        #expect(host.min()! >= 1)
    }

    @Test func noLimitStaysNoLimitOnEveryThread() {
        let shares = limits(threads: 2, host: 0, total: 0)
        #expect(shares.count == 2)
        #expect(shares.allSatisfy { $0.maxHostConnections == 0 && $0.maxTotalConnections == 0 })
        #expect(shares.map(\.maxCachedConnections) == [128, 128])
    }

    /// A share of 0 would mean "no limit" to libcurl, so a limit below the thread count
    /// runs fewer threads, one connection each.
    @Test func aLimitBelowTheThreadCountRunsFewerThreads() {
        #expect(limits(threads: 4, host: 1).count == 1)
        #expect(limits(threads: 4, host: 3).map(\.maxHostConnections) == [1, 1, 1])
        #expect(limits(threads: 4, host: 0, total: 2).map(\.maxTotalConnections) == [1, 1])
        #expect(limits(threads: 4, host: 0, cached: 1).count == 1)
    }

    @Test func theTransportRunsTheThreadsItWasGiven() throws {
        let two = try makeTransport(driverThreads: 2)
        defer { two.shutdown() }
        #expect(two.driverCount == 2)
        let capped = try makeTransport(maxHostConnections: 1, driverThreads: 2)
        defer { capped.shutdown() }
        #expect(capped.driverCount == 1)
    }

    /// With the host limit split over two threads, the two together still open no more
    /// connections to the host than the limit: requests beyond it wait for one of them.
    @Test func twoThreadsTogetherKeepToTheHostLimit() async throws {
        let server = try FaultServer(defaultBehavior: .holdUntilReleased(then: .json200))
        defer { server.stop() }
        let transport = try makeTransport(maxHostConnections: 3, driverThreads: 2)
        defer { transport.shutdown() }
        #expect(transport.driverCount == 2)

        let sends = (0..<8).map { index in
            Task { await transport.send(HTTPRequest(url: server.baseURL + "/r\(index)", timeout: .seconds(60))) }
        }
        // Three arrive (two on one thread's connections, one on the other's) and are held.
        #expect(await eventually { server.requestCount() >= 3 })
        server.releaseHolds()
        for send in sends {
            #expect(await send.value.response?.status == 200)
        }
        #expect(server.requestCount() == 8)
        #expect(server.connectionCount <= 3)
    }

    /// A request goes to the thread with the fewest: with one connection per thread and
    /// the first request held, the second goes to the other thread and is in flight too.
    @Test func aRequestGoesToTheLeastBusyThread() async throws {
        let server = try FaultServer(defaultBehavior: .holdUntilReleased(then: .json200))
        defer { server.stop() }
        let transport = try makeTransport(maxHostConnections: 2, driverThreads: 2)
        defer { transport.shutdown() }

        let first = Task { await transport.send(HTTPRequest(url: server.baseURL + "/a", timeout: .seconds(60))) }
        #expect(await eventually { server.requestCount() >= 1 })
        let second = Task { await transport.send(HTTPRequest(url: server.baseURL + "/b", timeout: .seconds(60))) }
        // The first thread's one connection to the host is taken: on it, /b would wait.
        #expect(await eventually { server.requestCount() >= 2 })
        #expect(server.connectionCount == 2)
        server.releaseHolds()
        #expect(await first.value.response?.status == 200)
        #expect(await second.value.response?.status == 200)
    }
}
