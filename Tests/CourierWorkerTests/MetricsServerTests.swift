@testable import CourierWorker
import CourierCore
import CourierHTTPServer
import CourierTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The metrics server on a real loopback socket, against good, malformed and slow clients.
/// No database: the handler answers from memory, like the worker's.
@Suite struct MetricsServerTests {
    /// A server on a free loopback port answering /healthz (and echoing the path elsewhere).
    func makeServer(ready: Bool = true, _ configure: (inout HTTPServer.Limits) -> Void = { _ in }) throws -> HTTPServer {
        var limits = HTTPServer.Limits()
        configure(&limits)
        let state = PrometheusText.WorkerState(workerID: "t", version: "t", concurrency: 1, inFlight: 0,
                                               stopping: !ready, databaseReachable: true)
        let router = WorkerEndpoint.router(state: { state }, page: { "# HELP t_total T.\n# TYPE t_total counter\nt_total 1\n" })
        let server = HTTPServer(address: HTTPServerAddress(host: "127.0.0.1", port: 0), limits: limits, router: router)
        try server.start()
        #expect(server.port > 0)
        return server
    }

    func expectHealthy(_ server: HTTPServer, _ comment: Comment? = nil) throws {
        let response = try MetricsTestClient.request(port: server.port, "GET", "/healthz", timeout: .seconds(5))
        #expect(response.status == 200, comment)
        #expect(response.body == "ok\n", comment)
    }

    @Test func answersKnownPathsAndRefusesOthers() throws {
        let server = try makeServer()
        defer { server.stop() }
        try expectHealthy(server)
        let metrics = try MetricsTestClient.request(port: server.port, "GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(metrics.headers["connection"] == "close")
        #expect(metrics.headers["content-length"] == String(metrics.body.utf8.count))
        #expect(metrics.body.contains("t_total 1"))
        let head = try MetricsTestClient.request(port: server.port, "HEAD", "/metrics")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == metrics.headers["content-length"])
        let post = try MetricsTestClient.request(port: server.port, "POST", "/metrics")
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
        #expect(try MetricsTestClient.request(port: server.port, "DELETE", "/healthz").status == 405)
        #expect(try MetricsTestClient.request(port: server.port, "GET", "/nothing-here").status == 404)
        #expect(try MetricsTestClient.request(port: server.port, "GET", "/metrics?x=1").status == 200)
    }

    @Test func malformedRequestsAreRefusedAndTheServerKeepsServing() throws {
        let server = try makeServer()
        defer { server.stop() }
        let cases: [(String, [UInt8], Int)] = [
            ("garbage bytes", [0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0a, 0x0d, 0x0a, 0x0d, 0x0a], 400),
            ("no HTTP version", Array("GET /metrics\r\n\r\n".utf8), 400),
            ("no HTTP version, line only", Array("GET /healthz\r\n".utf8), 400),
            ("lower-case method", Array("get /healthz HTTP/1.1\r\n\r\n".utf8), 400),
            ("HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), 400),
            ("header without colon", Array("GET /healthz HTTP/1.1\r\nHost\r\n\r\n".utf8), 400),
            ("huge header", Array(("GET /healthz HTTP/1.1\r\nX-Fill: " + String(repeating: "z", count: 20_000) + "\r\n\r\n").utf8), 431),
            ("endless header line", Array(("GET /healthz HTTP/1.1\r\nX-Fill: " + String(repeating: "z", count: 9_000)).utf8), 431),
        ]
        for (name, bytes, expected) in cases {
            let response = try MetricsTestClient.raw(port: server.port, bytes)
            #expect(response?.status == expected, "\(name)")
            #expect(response?.headers["connection"] == "close", "\(name)")
            try expectHealthy(server, "after \(name)")
        }
        // A client that connects and leaves at once, and one that sends half a request and leaves.
        _ = try MetricsTestConnection(port: server.port)
        do {
            let half = try MetricsTestConnection(port: server.port)
            half.send("GET /heal")
        }
        try expectHealthy(server, "after clients that left early")
    }

    @Test func slowClientsDoNotStallOtherRequests() throws {
        // The request timeout is far longer than the test: the slow clients stay connected
        // throughout, so /healthz answering at all proves they do not block the server.
        let server = try makeServer { $0.requestTimeout = .seconds(120) }
        defer { server.stop() }
        let silent = try (0..<4).map { _ in try MetricsTestConnection(port: server.port) }
        let partial = try MetricsTestConnection(port: server.port)
        partial.send("GET /healthz HTTP/1.1\r\nHost: a\r\n")  // never finishes its head
        let request = Array("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let dribbler = try MetricsTestConnection(port: server.port)
        let port = server.port
        // One byte at a time, each after a health check was answered (a dribble paced by the
        // checks, not by a clock): every check runs while the dribbler's head is incomplete.
        for byte in request.dropLast() {
            dribbler.send([byte])
            try expectHealthy(server, "while slow clients are connected")
        }
        dribbler.send([request.last!])
        let slow = dribbler.readToEnd(timeout: .seconds(20)).flatMap { try? MetricsTestResponse($0) }
        #expect(slow?.status == 200, "the dribbling client is answered once its head is complete")
        // The silent and partial clients are still connected: nothing was closed under them.
        #expect(silent.count == 4)
        #expect(!partial.isClosedByServer(within: .milliseconds(100)))
        #expect(try MetricsTestClient.request(port: port, "GET", "/metrics").status == 200)
    }

    @Test func aClientThatSendsNothingIsTimedOut() throws {
        let server = try makeServer { $0.requestTimeout = .milliseconds(300) }
        defer { server.stop() }
        let silent = try MetricsTestConnection(port: server.port)
        let answer = silent.readToEnd(timeout: .seconds(20))
        #expect(answer != nil, "the server must close a silent connection")
        if let answer, !answer.isEmpty {
            #expect(try MetricsTestResponse(answer).status == 408)
        }
        let dribbling = try MetricsTestConnection(port: server.port)
        dribbling.send("GET /")
        #expect(dribbling.isClosedByServer(within: .seconds(20)), "a head that never completes is cut off")
        try expectHealthy(server)
    }

    /// Issue 18 (slowloris): 500 idle connections made 59% of scrapes answer 503, and
    /// Kubernetes probes /healthz on that port. With the connections held open the whole
    /// time (the head timeout is far longer than the test), every probe and every scrape
    /// is answered, and the oldest idle connections are the ones closed.
    @Test func fiveHundredIdleConnectionsCannotStarveProbesOrScrapes() throws {
        let server = try makeServer { $0.requestTimeout = .seconds(600) }
        defer { server.stop() }
        var idle: [MetricsTestConnection] = []
        for index in 0..<500 {
            let connection = try MetricsTestConnection(port: server.port)
            if index % 2 == 0 { connection.send("GET /metrics HTTP/1.1\r\nHost: a\r\n") }  // half a head
            idle.append(connection)
        }
        for round in 0..<30 {
            for path in ["/healthz", "/readyz", "/metrics"] {
                let response = try MetricsTestClient.request(port: server.port, "GET", path, timeout: .seconds(20))
                #expect(response.status == 200, "round \(round) \(path): \(response.status)")
            }
        }
        // The server held at most its slots: the first connections were closed to make room.
        #expect(idle[0].isClosedByServer(within: .seconds(20)))
        let limits = HTTPServer.Limits()
        let stillOpen = idle.filter { !$0.isClosedByServer(within: .milliseconds(5)) }.count
        #expect(stillOpen <= limits.maxConnections + limits.reservedConnections, "\(stillOpen) idle connections held")
    }

    /// The reserved slots serve probes only: when every ordinary slot holds a request
    /// being answered (here: clients that never read their large answers), /healthz
    /// still gets 200 and /metrics a clear 503.
    @Test func reservedSlotsServeProbesWhenOrdinarySlotsAreBusy() throws {
        let bigPage = String(repeating: "# padding line to fill socket buffers\n", count: 1_000_000)
        var limits = HTTPServer.Limits()
        limits.maxConnections = 2
        limits.reservedConnections = 2
        limits.requestTimeout = .seconds(600)
        limits.writeTimeout = .seconds(600)
        let state = PrometheusText.WorkerState(workerID: "t", version: "t", concurrency: 1, inFlight: 0, stopping: false,
                                               databaseReachable: true)
        let server = HTTPServer(address: HTTPServerAddress(host: "127.0.0.1", port: 0), limits: limits,
                                router: WorkerEndpoint.router(state: { state }, page: { bigPage }))
        try server.start()
        defer { server.stop() }
        // Two clients ask for the 38 MB page and never read it: their answers stay unsent.
        let stuck = try (0..<2).map { _ in try MetricsTestConnection(port: server.port) }
        for connection in stuck {
            connection.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
            // Their answers have started arriving, so both hold ordinary slots while writing.
            var entry = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            #expect(poll(&entry, 1, 20_000) == 1, "the server starts answering")
        }
        let busy = try MetricsTestClient.request(port: server.port, "GET", "/metrics", timeout: .seconds(20))
        #expect(busy.status == 503, "an ordinary request in a reserved slot is refused while ordinary slots are busy")
        #expect(busy.body.contains("health probes"))
        for _ in 0..<20 {
            try expectHealthy(server, "probes use the reserved slots")
            #expect(try MetricsTestClient.request(port: server.port, "GET", "/readyz", timeout: .seconds(20)).status == 200)
        }
        #expect(stuck.count == 2)
    }

    @Test func whenEverySlotIsTakenTheOldestIdleConnectionMakesRoom() throws {
        let server = try makeServer {
            $0.maxConnections = 2
            $0.reservedConnections = 1
            $0.requestTimeout = .seconds(600)
        }
        defer { server.stop() }
        let held = try (0..<3).map { _ in try MetricsTestConnection(port: server.port) }
        held[0].send("GET /heal")
        held[1].send("GET /heal")
        held[2].send("GET /heal")
        // A fourth connection takes the place of the first, which gets a 503 and is closed.
        #expect(try MetricsTestClient.request(port: server.port, "GET", "/metrics", timeout: .seconds(20)).status == 200)
        let evicted = held[0].readToEnd(timeout: .seconds(20))
        #expect(evicted.flatMap { try? MetricsTestResponse($0) }?.status == 503)
        try expectHealthy(server)
    }

    @Test func stopClosesTheListenerAndRunsHooks() throws {
        let server = try makeServer()
        let ran = LockedFlag()
        server.onStop { ran.set() }
        let port = server.port
        try expectHealthy(server)
        server.stop()
        #expect(ran.value)
        #expect(throws: LoopbackConnection.Failure.self) { _ = try MetricsTestConnection(port: port) }
        server.stop()  // a second stop is harmless
    }

    @Test func aTakenPortIsABindError() throws {
        let first = try makeServer()
        defer { first.stop() }
        let second = HTTPServer(address: HTTPServerAddress(host: "127.0.0.1", port: first.port)) { _ in
            HTTPServer.Response(status: 200, text: "")
        }
        do {
            try second.start()
            Issue.record("binding a taken port must fail")
            second.stop()
        } catch {
            #expect(error.code == .bind)
            #expect(error.description.contains("127.0.0.1:\(first.port)"))
        }
    }
}

final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var value: Bool { lock.withLock { flag } }
}

/// The worker's routes answering one request, as the endpoint would.
enum WorkerTestRoutes {
    static func route(_ request: HTTPServer.Request, state: @escaping @Sendable () -> PrometheusText.WorkerState,
                      page: @escaping @Sendable () -> String) -> HTTPServer.Response {
        WorkerEndpoint.router(state: state, page: page).respond(to: request)
    }
}
