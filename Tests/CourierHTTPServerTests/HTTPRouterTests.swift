import CourierCore
import CourierHTTPServer
import Testing

@Suite struct HTTPRouterTests {
    static let router = HTTPRouter([
        HTTPRoute(.exact("/healthz"), isProbe: true) { _ in HTTPServer.Response(status: 200, text: "ok\n") },
        HTTPRoute(.exact("/api/jobs"), methods: ["GET", "POST"]) { request in
            HTTPServer.Response(status: 200, text: request.method + " " + (request.header("authorization") ?? "-"))
        },
        HTTPRoute(.prefix("/jobs/")) { request in HTTPServer.Response(status: 200, text: String(request.path.dropFirst(6))) },
    ])

    func body(_ response: HTTPServer.Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func routesByPathAndMethod() {
        let r = Self.router
        #expect(body(r.respond(to: .init(method: "GET", path: "/healthz"))) == "ok\n")
        #expect(r.respond(to: .init(method: "HEAD", path: "/healthz")).status == 200, "HEAD goes wherever GET does")
        #expect(body(r.respond(to: .init(method: "GET", path: "/jobs/42"))) == "42")
        let post = r.respond(to: .init(method: "POST", path: "/api/jobs", headers: [.init("Authorization", "Bearer t")]))
        #expect(body(post) == "POST Bearer t")
        let wrong = r.respond(to: .init(method: "DELETE", path: "/api/jobs"))
        #expect(wrong.status == 405)
        #expect(wrong.headers == [.init("Allow", "GET, POST, HEAD")])
        let missing = r.respond(to: .init(method: "GET", path: "/nope"))
        #expect(missing.status == 404)
        #expect(body(missing) == "not found; try /healthz or /api/jobs\n")
    }

    @Test func onlyProbeRoutesWithAnAllowedMethodAreProbes() {
        let r = Self.router
        #expect(r.isProbe(.init(method: "GET", path: "/healthz")))
        #expect(r.isProbe(.init(method: "HEAD", path: "/healthz")))
        #expect(!r.isProbe(.init(method: "POST", path: "/healthz")))
        #expect(!r.isProbe(.init(method: "GET", path: "/api/jobs")))
        #expect(!r.isProbe(.init(method: "GET", path: "/healthz/x")))
    }

    @Test func requestHeadsCarryTheirHeaders() {
        let head = "GET /api/jobs?limit=5 HTTP/1.1\r\nHost: a\r\nAuthorization:  Bearer x \r\nOrigin: http://e\r\n\r\n"
        guard case .request(let request) = HTTPServer.parseHead(Array(head.utf8), maxHeaderBytes: 8192) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.path == "/api/jobs" && request.query == "limit=5")
        #expect(request.header("AUTHORIZATION") == "Bearer x")
        #expect(request.header("origin") == "http://e")
        #expect(request.headers.count == 3)
    }

    @Test func addressesNameTheirField() throws {
        let error = #expect(throws: ValidationError.self) { try HTTPServerAddress(parsing: "nope", field: "--listen") }
        #expect(error?.field == "--listen")
        #expect(try HTTPServerAddress(parsing: "127.0.0.1:8377", field: "--listen") == HTTPServerAddress(host: "127.0.0.1", port: 8377))
    }
}
