import CourierHTTPServer
import CourierTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct HTTPBodyTests {
    func parse(_ text: String, maxBody: Int = 100) -> HTTPServer.HeadParse {
        HTTPServer.parseRequest(Array(text.utf8), maxHeaderBytes: 8192, maxBodyBytes: maxBody)
    }

    @Test func aBodyIsReadToItsContentLength() {
        let head = "POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n"
        #expect(parse(head + "a=1") == .incomplete)
        guard case .request(let request) = parse(head + "a=1&b=2") else { Issue.record("expected a request"); return }
        #expect(String(decoding: request.body, as: UTF8.self) == "a=1&b=2")
        #expect(request.formItems.isEmpty, "not a form without its content type")
    }

    @Test func oversizedChunkedAndBadLengthsAreRefused() {
        let post = "POST / HTTP/1.1\r\nHost: a\r\n"
        #expect(parse(post + "Content-Length: 101\r\n\r\n") == .reject(status: 413, message: "request body larger than 100 bytes"))
        if case .reject(let status, _) = parse(post + "Transfer-Encoding: chunked\r\n\r\n") { #expect(status == 411) } else { Issue.record("chunked") }
        if case .reject(let status, _) = parse(post + "Content-Length: -1\r\n\r\n") { #expect(status == 400) } else { Issue.record("negative") }
        if case .reject(let status, _) = parse(post + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n") { #expect(status == 400) } else { Issue.record("two") }
    }

    @Test func withoutBodiesTheHeadAloneIsTheRequest() {
        guard case .request(let request) = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", maxBody: 0) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body.isEmpty)
    }

    @Test func blockingRoutesRunOffTheServerThreadAndGetTheirBody() throws {
        let gate = DispatchSemaphore(value: 0)
        var limits = HTTPServer.Limits()
        limits.maxBodyBytes = 1024
        let router = HTTPRouter([
            HTTPRoute(.exact("/slow"), methods: ["POST"], blocking: true) { request in
                _ = gate.wait(timeout: .now() + 10)
                return HTTPServer.Response(status: 200, text: "got " + (request.formItems.first?.value ?? "-"))
            },
            HTTPRoute(.exact("/fast")) { _ in HTTPServer.Response(status: 200, text: "fast") },
        ])
        let server = HTTPServer(address: HTTPServerAddress(host: "127.0.0.1", port: 0), limits: limits, router: router)
        try server.start()
        defer { server.stop() }
        let slow = try LoopbackConnection(port: server.port)
        slow.send("POST /slow HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5\r\n\r\nv=abc")
        // While the blocking handler waits, the server thread still answers others.
        let fast = try LoopbackConnection(port: server.port)
        fast.send("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(fast.readTextToEnd().hasSuffix("fast"))
        gate.signal()
        #expect(slow.readTextToEnd().hasSuffix("got abc"))
    }
}
