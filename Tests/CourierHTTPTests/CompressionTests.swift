import CourierCore
import CourierTestSupport
import Foundation
import Testing
@testable import CourierHTTP

/// A server that compresses its answer whatever it was offered: libcurl decodes it, so
/// the content checks see JSON, not gzip bytes. The worker offers `identity` (it reads at
/// most a prefix of an answer, and compressing a small one costs both ends CPU) unless the
/// job's own headers name the encodings. The server is Python's standard library on
/// loopback (COURIER_TEST_PYTHON), answering each request with a gzipped JSON body that
/// says what the request offered.
@Suite("Compressed responses")
struct CompressionTests {
    static let server = #"""
        import gzip, http.server, sys
        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = gzip.compress(b'{"ok": true, "offered": "' + self.headers.get("Accept-Encoding", "").encode() + b'"}')
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        s = http.server.HTTPServer(("127.0.0.1", 0), H)
        print(s.server_address[1], flush=True)
        for _ in range(2):
            s.handle_request()
        """#

    @Test func aGzippedJSONBodyIsDecodedBeforeItIsChecked() async throws {
        let python = try #require(ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"], "COURIER_TEST_PYTHON is not set: run scripts/test.sh")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", Self.server]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        var portText = ""
        while !portText.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            portText += String(decoding: chunk, as: UTF8.self)
        }
        let port = try #require(Int(portText.trimmingCharacters(in: .whitespacesAndNewlines)), "server printed \(portText)")
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let plain = await transport.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/hook", body: Array("{}".utf8)))
        let response = try #require(plain.response, "got \(plain)")
        let text = String(decoding: response.bodyPrefix, as: UTF8.self)
        #expect(text == #"{"ok": true, "offered": "identity"}"#, "decoded body: \(text)")
        let classification = OutcomeClassifier.classify(plain, expectContentType: "application/json", now: Date())
        #expect(classification.succeeded, "\(classification.message)")

        // A job that asks for compression in its own headers offers what it names.
        let asked = await transport.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/hook",
                                                     headers: [HTTPHeader(name: "Accept-Encoding", value: "gzip")],
                                                     body: Array("{}".utf8)))
        let askedText = String(decoding: try #require(asked.response, "got \(asked)").bodyPrefix, as: UTF8.self)
        #expect(askedText == #"{"ok": true, "offered": "gzip"}"#, "decoded body: \(askedText)")
    }
}
