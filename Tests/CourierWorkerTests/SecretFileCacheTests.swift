import CourierTestSupport
import CourierWorker
import Foundation
import Testing

/// Secret files are read once and again only when they change, so an attempt does not
/// read files on the cooperative pool; a rotated secret is sent once its last look expires.
@Suite struct SecretFileCacheTests {
    func withDirectory(_ body: (String) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-secret-cache-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test func aSecretFileIsReadOnceAndAgainOnlyWhenItChanged() throws {
        try withDirectory { directory in
            try "first\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
            try "*\n".write(toFile: directory + "/token.destinations", atomically: true, encoding: .utf8)
            let clock = ManualClock()
            let files = SecretFileCache(recheckAfter: .seconds(1), now: { clock.now })
            let resolver = SecretResolver(environment: [:], directory: directory, files: files)
            let destination = "https://api.example.com:443"
            for _ in 0..<50 { #expect(resolver.resolve("token", forDestination: destination) == .success("first")) }
            #expect(files.reads == 2, "the secret and its binding, each read once for 50 attempts")

            // Rotated (a new file renamed over the old, as a Secret mount swaps it): still the
            // old value until the last look expires, then the new one, read once more.
            try "second\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
            #expect(resolver.resolve("token", forDestination: destination) == .success("first"))
            clock.advance(.milliseconds(1500))
            #expect(resolver.resolve("token", forDestination: destination) == .success("second"))
            #expect(files.reads == 3, "only the changed file is read again; the binding is unchanged")

            // Unchanged after another expiry: looked at, not read.
            clock.advance(.seconds(2))
            #expect(resolver.resolve("token", forDestination: destination) == .success("second"))
            #expect(files.reads == 3)

            // Removed: missing once the last look expires.
            try FileManager.default.removeItem(atPath: directory + "/token")
            clock.advance(.seconds(2))
            #expect(resolver.resolve("token", forDestination: destination) == .failure(.missing(name: "token")))
        }
    }
}
