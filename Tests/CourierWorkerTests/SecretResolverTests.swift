import CourierWorker
import Foundation
import Testing

/// `{"secret": "NAME"}` header values resolved from a secrets directory (as a
/// mounted Kubernetes Secret lays it out: one file per key) and from the environment.
@Suite struct SecretResolverTests {
    /// A fresh directory, removed after `body`.
    func withDirectory(_ body: (String) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-secrets-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test func aSecretIsReadFromItsFileInTheDirectory() throws {
        try withDirectory { directory in
            try "Bearer from-file\n".write(toFile: directory + "/partner-token", atomically: true, encoding: .utf8)
            try "crlf-value\r\n".write(toFile: directory + "/crlf", atomically: true, encoding: .utf8)
            try "  spaced  ".write(toFile: directory + "/spaced", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: [:], directory: directory)
            #expect(resolver.resolve("partner-token") == "Bearer from-file", "the trailing newline is removed")
            #expect(resolver.resolve("crlf") == "crlf-value")
            #expect(resolver.resolve("spaced") == "  spaced  ", "only line ends are trimmed")
            #expect(resolver.resolve("missing") == nil)
        }
    }

    @Test func theEnvironmentWinsOverTheDirectory() throws {
        try withDirectory { directory in
            try "from-file".write(toFile: directory + "/partner-token", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: ["COURIER_SECRET_PARTNER_TOKEN": "from-env"], directory: directory)
            #expect(resolver.resolve("partner-token") == "from-env")
            #expect(SecretResolver.environmentName(for: "partner.token-2") == "COURIER_SECRET_PARTNER_TOKEN_2")
        }
    }

    @Test func namesCannotEscapeTheDirectory() throws {
        try withDirectory { directory in
            let inner = directory + "/inner"
            try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: false)
            try "outside".write(toFile: directory + "/outside", atomically: true, encoding: .utf8)
            try "hidden".write(toFile: inner + "/.hidden", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: [:], directory: inner)
            #expect(resolver.resolve("../outside") == nil)
            #expect(resolver.resolve(".hidden") == nil)
            #expect(resolver.resolve("..") == nil)
            #expect(resolver.resolve("/etc/hostname") == nil)
        }
    }

    @Test func withoutADirectoryOnlyTheEnvironmentCounts() {
        let resolver = SecretResolver(environment: ["COURIER_SECRET_A": "x"], directory: nil)
        #expect(resolver.resolve("a") == "x")
        #expect(resolver.resolve("b") == nil)
    }
}
