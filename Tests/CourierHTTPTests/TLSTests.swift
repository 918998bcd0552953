import CourierCore
import CourierTestSupport
import Foundation
import Testing
@testable import CourierHTTP

@Suite("TLS")
struct TLSTests {
    @Test func selfSignedCertificateIsRefusedAndNotSent() async throws {
        let server = try OpenSSLTestServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(method: "POST", url: "https://127.0.0.1:\(server.port)/", body: [1]))

        guard case .notSent(let message) = outcome else {
            Issue.record("expected notSent, got \(outcome)")
            return
        }
        #expect(message.contains("TLS"))
    }

    @Test func stalledTLSHandshakeTimesOutWithoutConnecting() async throws {
        // The fault server speaks plain HTTP, so it never answers a TLS ClientHello.
        let server = try FaultServer()
        defer { server.stop() }
        let transport = try makeTransport()
        defer { transport.shutdown() }

        let outcome = await transport.send(HTTPRequest(url: "https://127.0.0.1:\(server.port)/", timeout: .milliseconds(300)))

        guard case .timedOut(let connected, _) = outcome else {
            Issue.record("expected timedOut, got \(outcome)")
            return
        }
        #expect(connected == false)
        #expect(server.requestCount() == 0)
    }
}

/// `openssl s_server` with a fresh self-signed certificate, on a loopback port.
private final class OpenSSLTestServer {
    let port: Int
    private let process: Process
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        let cert = directory.appendingPathComponent("cert.pem").path
        let openssl = try #require(
            ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "the TLS tests need the openssl command-line tool (apt-get install openssl)"
        )
        let generate = Process()
        generate.executableURL = URL(fileURLWithPath: openssl)
        generate.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                              "-days", "1", "-keyout", key, "-out", cert]
        generate.standardOutput = FileHandle.nullDevice
        generate.standardError = FileHandle.nullDevice
        try generate.run()
        generate.waitUntilExit()
        try #require(generate.terminationStatus == 0, "openssl could not create a test certificate")

        process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key, "-www"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = Pipe()
        try process.run()
        // Reads until openssl prints its port; each read waits for output (poll) until a
        // deadline 20 s out, which only keeps a broken openssl from hanging the test.
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = ContinuousClock.now + .seconds(20)
        var text = ""
        var port: Int?
        while port == nil {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(left / .milliseconds(1)))
            if ready < 0 && errno == EINTR { continue }
            guard ready == 1 else { break }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT") }),
               let last = line.split(separator: ":").last {
                port = Int(last.trimmingCharacters(in: .whitespaces))
            }
        }
        guard let port else {
            kill(process.processIdentifier, SIGKILL)
            throw OpenSSLTestServerError(output: text)
        }
        self.port = port
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

private struct OpenSSLTestServerError: Error, CustomStringConvertible {
    let output: String
    var description: String { "openssl s_server did not report its port: \(output)" }
}
