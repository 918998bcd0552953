import CourierWorker
import Foundation
import Testing

/// `{"secret": "NAME"}` header values resolved from a secrets directory (as a
/// mounted Kubernetes Secret lays it out: one file per key) and from the environment,
/// each only for the destinations it is bound to.
@Suite struct SecretResolverTests {
    static let partner = "https://partner.example.com:443"

    /// Every secret of these tests is bound to the partner through the environment.
    static func bound(_ environment: [String: String], names: [String]) -> [String: String] {
        var result = environment
        for name in names { result[SecretResolver.bindingEnvironmentName(for: name)] = "https://partner.example.com" }
        return result
    }

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
            let resolver = SecretResolver(environment: Self.bound([:], names: ["partner-token", "crlf", "spaced", "missing"]), directory: directory)
            #expect(resolver.resolve("partner-token", forDestination: Self.partner) == .success("Bearer from-file"), "the trailing newline is removed")
            #expect(resolver.resolve("crlf", forDestination: Self.partner) == .success("crlf-value"))
            #expect(resolver.resolve("spaced", forDestination: Self.partner) == .success("  spaced  "), "only line ends are trimmed")
            #expect(resolver.resolve("missing", forDestination: Self.partner) == .failure(.missing(name: "missing")))
        }
    }

    @Test func theEnvironmentWinsOverTheDirectory() throws {
        try withDirectory { directory in
            try "from-file".write(toFile: directory + "/partner-token", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: Self.bound(["COURIER_SECRET_PARTNER_TOKEN": "from-env"], names: ["partner-token"]), directory: directory)
            #expect(resolver.resolve("partner-token", forDestination: Self.partner) == .success("from-env"))
            #expect(SecretResolver.environmentName(for: "partner.token-2") == "COURIER_SECRET_PARTNER_TOKEN_2")
        }
    }

    @Test func namesCannotEscapeTheDirectory() throws {
        try withDirectory { directory in
            let inner = directory + "/inner"
            try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: false)
            try "outside".write(toFile: directory + "/outside", atomically: true, encoding: .utf8)
            try "hidden".write(toFile: inner + "/.hidden", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: ["COURIER_SECRET______OUTSIDE_DESTINATIONS": "*"], directory: inner)
            for name in ["../outside", ".hidden", "..", "/etc/hostname"] {
                #expect(resolver.resolve(name, forDestination: Self.partner) == .failure(.missing(name: name)), "\(name)")
            }
        }
    }

    @Test func withoutADirectoryOnlyTheEnvironmentCounts() {
        let resolver = SecretResolver(environment: Self.bound(["COURIER_SECRET_A": "x"], names: ["a", "b"]), directory: nil)
        #expect(resolver.resolve("a", forDestination: Self.partner) == .success("x"))
        #expect(resolver.resolve("b", forDestination: Self.partner) == .failure(.missing(name: "b")))
    }

    /// Deny unless bound: a secret without a binding, or for another destination, is refused.
    @Test func aSecretGoesOnlyToTheDestinationsItIsBoundTo() {
        let environment = [
            "COURIER_SECRET_PARTNER_TOKEN": "p", "COURIER_SECRET_PARTNER_TOKEN_DESTINATIONS": "https://partner.example.com, http://127.0.0.1:8080/hooks",
            "COURIER_SECRET_LOOSE": "l",
            "COURIER_SECRET_EVERYWHERE": "e", "COURIER_SECRET_EVERYWHERE_DESTINATIONS": "*",
            "COURIER_SECRET_BROKEN": "b", "COURIER_SECRET_BROKEN_DESTINATIONS": "partner.example.com",
        ]
        let resolver = SecretResolver(environment: environment, directory: nil)
        #expect(resolver.resolve("PARTNER_TOKEN", for: "https://PARTNER.example.com/x?y=1") == .success("p"))
        #expect(resolver.resolve("PARTNER_TOKEN", for: "http://127.0.0.1:8080/other") == .success("p"))
        #expect(resolver.resolve("PARTNER_TOKEN", for: "https://evil.example/steal")
            == .failure(.notBound(name: "PARTNER_TOKEN", destination: "https://evil.example:443")))
        #expect(resolver.resolve("PARTNER_TOKEN", for: "http://partner.example.com/") // another scheme and port
            == .failure(.notBound(name: "PARTNER_TOKEN", destination: "http://partner.example.com:80")))
        #expect(resolver.resolve("LOOSE", for: "https://partner.example.com/")
            == .failure(.notBound(name: "LOOSE", destination: "https://partner.example.com:443")))
        #expect(resolver.resolve("EVERYWHERE", for: "https://anywhere.example/") == .success("e"))
        guard case .failure(.badBinding(let name, let reason)) = resolver.resolve("BROKEN", for: "https://partner.example.com/") else {
            Issue.record("a binding that is not a destination refuses the secret")
            return
        }
        #expect(name == "BROKEN" && reason.contains("partner.example.com"))
        // The binding itself is not a secret anyone can ask for.
        #expect(resolver.resolve("PARTNER_TOKEN_DESTINATIONS", for: "https://partner.example.com/") == .failure(.missing(name: "PARTNER_TOKEN_DESTINATIONS")))
    }

    @Test func aBindingFileBesideTheSecretCounts() throws {
        try withDirectory { directory in
            try "file-secret\n".write(toFile: directory + "/partner-token", atomically: true, encoding: .utf8)
            try "# where partner-token may go\nhttps://partner.example.com\n\nhttps://backup.example.com:8443 # second\n"
                .write(toFile: directory + "/partner-token.destinations", atomically: true, encoding: .utf8)
            let resolver = SecretResolver(environment: [:], directory: directory)
            #expect(resolver.resolve("partner-token", for: "https://partner.example.com/a") == .success("file-secret"))
            #expect(resolver.resolve("partner-token", for: "https://backup.example.com:8443/a") == .success("file-secret"))
            #expect(resolver.resolve("partner-token", for: "https://backup.example.com/a")
                == .failure(.notBound(name: "partner-token", destination: "https://backup.example.com:443")))
            #expect(resolver.resolve("partner-token.destinations", for: "https://partner.example.com/")
                == .failure(.missing(name: "partner-token.destinations")))
            let message = SecretResolver.Refusal.notBound(name: "partner-token", destination: "https://evil.example:443").description
            #expect(message.contains("COURIER_SECRET_PARTNER_TOKEN_DESTINATIONS") && message.contains("partner-token.destinations"))
        }
    }
}
