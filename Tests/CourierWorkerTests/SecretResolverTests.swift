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
            for name in ["partner-token", "crlf", "spaced"] {
                try "https://partner.example.com\n".write(toFile: directory + "/\(name).destinations", atomically: true, encoding: .utf8)
            }
            let resolver = SecretResolver(environment: [:], directory: directory)
            #expect(resolver.resolve("partner-token", forDestination: Self.partner) == .success("Bearer from-file"), "the trailing newline is removed")
            #expect(resolver.resolve("crlf", forDestination: Self.partner) == .success("crlf-value"))
            #expect(resolver.resolve("spaced", forDestination: Self.partner) == .success("  spaced  "), "only line ends are trimmed")
            #expect(resolver.resolve("missing", forDestination: Self.partner) == .failure(.missing(name: "missing")))
        }
    }

    @Test func theEnvironmentAloneServesASecret() {
        let resolver = SecretResolver(environment: Self.bound(["COURIER_SECRET_PARTNER_TOKEN": "from-env"], names: ["partner-token"]), directory: nil)
        #expect(resolver.resolve("partner-token", forDestination: Self.partner) == .success("from-env"))
        #expect(SecretResolver.environmentName(for: "partner.token-2") == "COURIER_SECRET_PARTNER_TOKEN_2")
    }

    /// Issue 43 item 6, the attack as measured: the file secret `api.token` is bound by its
    /// own file to the partner; `COURIER_SECRET_API_TOKEN_DESTINATIONS`, meant for the
    /// environment secret `api-token`, allows another host. The binding was looked up
    /// environment-first, apart from the value, so the file secret went to that host.
    @Test func aFileSecretIsNeverSentWhereAnotherNamesEnvironmentBindingAllows() throws {
        try withDirectory { directory in
            try "file-secret-value\n".write(toFile: directory + "/api.token", atomically: true, encoding: .utf8)
            try "https://partner.example.com\n".write(toFile: directory + "/api.token.destinations", atomically: true, encoding: .utf8)
            let environment = ["COURIER_SECRET_API_TOKEN_DESTINATIONS": "https://other.example.com"]
            let resolver = SecretResolver(environment: environment, directory: directory)
            let ambiguous = SecretResolver.Refusal.ambiguous(
                name: "api.token", environment: ["COURIER_SECRET_API_TOKEN_DESTINATIONS"], files: ["api.token", "api.token.destinations"])
            #expect(resolver.resolve("api.token", for: "https://other.example.com/steal") == .failure(ambiguous))
            #expect(resolver.resolve("api.token", for: "https://partner.example.com/") == .failure(ambiguous),
                    "refused everywhere until the operator removes one of them, not resolved from the file either")
            let message = ambiguous.description
            for part in ["\"api.token\"", "ambiguous", "COURIER_SECRET_API_TOKEN_DESTINATIONS", "api.token.destinations", "remove one"] {
                #expect(message.contains(part), "\(message)")
            }
            // Without the stray variable the file's own binding decides.
            let alone = SecretResolver(environment: [:], directory: directory)
            #expect(alone.resolve("api.token", for: "https://partner.example.com/") == .success("file-secret-value"))
            #expect(alone.resolve("api.token", for: "https://other.example.com/")
                == .failure(.notBound(name: "api.token", destination: "https://other.example.com:443")))
        }
    }

    /// `api.token`, `api-token` and `API_TOKEN` share one environment variable. A name with
    /// anything in both places (a value or a binding, in the environment and in the
    /// directory) is refused, whichever spelling a job uses; each place alone still serves.
    @Test func aNameFoundInBothPlacesIsRefusedAsAmbiguous() throws {
        try withDirectory { directory in
            try "from-file".write(toFile: directory + "/api.token", atomically: true, encoding: .utf8)
            try "*".write(toFile: directory + "/api.token.destinations", atomically: true, encoding: .utf8)
            try "https://partner.example.com".write(toFile: directory + "/lonely.destinations", atomically: true, encoding: .utf8)
            let environment = [
                "COURIER_SECRET_API_TOKEN": "from-env", "COURIER_SECRET_API_TOKEN_DESTINATIONS": "https://partner.example.com",
                "COURIER_SECRET_LONELY": "env-value",
            ]
            let resolver = SecretResolver(environment: environment, directory: directory)
            guard case .failure(.ambiguous(let name, let variables, let files)) = resolver.resolve("api.token", forDestination: Self.partner) else {
                Issue.record("a value in both places is ambiguous")
                return
            }
            #expect(name == "api.token" && files == ["api.token", "api.token.destinations"])
            #expect(variables == ["COURIER_SECRET_API_TOKEN", "COURIER_SECRET_API_TOKEN_DESTINATIONS"])
            // Other spellings have no file: the environment alone serves them, with its own binding.
            #expect(resolver.resolve("api-token", forDestination: Self.partner) == .success("from-env"))
            #expect(resolver.resolve("API_TOKEN", forDestination: "https://elsewhere.example:443")
                == .failure(.notBound(name: "API_TOKEN", destination: "https://elsewhere.example:443")),
                    "the file's `*` never widens the environment secret")
            // A value in one place and only a binding in the other: ambiguous too.
            #expect(resolver.resolve("lonely", forDestination: Self.partner)
                == .failure(.ambiguous(name: "lonely", environment: ["COURIER_SECRET_LONELY"], files: ["lonely.destinations"])))
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
            "COURIER_SECRET_PARTNER_TOKEN": "p", "COURIER_SECRET_PARTNER_TOKEN_DESTINATIONS": "https://partner.example.com, http://127.0.0.1:8080/",
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

    /// Issue 43 item 7: a binding entry with a path was widened to its whole host, so a
    /// secret bound to `/hooks` went to `/admin` too. An entry is an origin; one with a
    /// path, query or fragment is refused when the binding is read, naming the entry and
    /// the origin to write instead, so no path trick (`..`, `%2e%2e`, `%2f`) has anything
    /// to get past.
    @Test func aBindingEntryWithAPathIsRefusedNotWidenedToItsHost() {
        let entries = [
            "https://partner.example.com/hooks", "https://partner.example.com/hooks/", "https://partner.example.com/hooks/../admin",
            "https://partner.example.com/%2e%2e/admin", "https://partner.example.com?x=1", "https://partner.example.com/hooks;v=1",
            "https://partner.example.com:443//", "https://partner.example.com/a%2Fb",
        ]
        for entry in entries {
            let resolver = SecretResolver(environment: ["COURIER_SECRET_HOOK": "hook-value", "COURIER_SECRET_HOOK_DESTINATIONS": "https://other.example, " + entry],
                                          directory: nil)
            for url in ["https://partner.example.com/admin", "https://partner.example.com/hooks", "https://other.example/"] {
                guard case .failure(.badBinding(let name, let reason)) = resolver.resolve("HOOK", for: url) else {
                    Issue.record("\(entry) must refuse the secret for \(url), not widen to the host")
                    continue
                }
                #expect(name == "HOOK" && reason.contains(entry) && reason.contains("write https://partner.example.com:443"), "\(reason)")
            }
        }
        // The origin alone, with or without a trailing slash, binds as before.
        for entry in ["https://partner.example.com", "https://partner.example.com/", "https://PARTNER.example.com:443/"] {
            let resolver = SecretResolver(environment: ["COURIER_SECRET_HOOK": "hook-value", "COURIER_SECRET_HOOK_DESTINATIONS": entry], directory: nil)
            #expect(resolver.resolve("HOOK", for: "https://partner.example.com/admin") == .success("hook-value"), "\(entry)")
        }
    }

    /// What the worker refuses to start with: each unreadable binding (variable or file) and
    /// each ambiguous name, named; a clean setup has none.
    @Test func startupProblemsNameEveryUnreadableBindingAndAmbiguousName() throws {
        try withDirectory { directory in
            try "v".write(toFile: directory + "/good", atomically: true, encoding: .utf8)
            try "https://partner.example.com".write(toFile: directory + "/good.destinations", atomically: true, encoding: .utf8)
            try "v".write(toFile: directory + "/pathy", atomically: true, encoding: .utf8)
            try "https://partner.example.com/hooks".write(toFile: directory + "/pathy.destinations", atomically: true, encoding: .utf8)
            try "v".write(toFile: directory + "/both", atomically: true, encoding: .utf8)
            let environment = [
                "COURIER_SECRET_OK": "v", "COURIER_SECRET_OK_DESTINATIONS": "https://partner.example.com",
                "COURIER_SECRET_BAD": "v", "COURIER_SECRET_BAD_DESTINATIONS": "https://partner.example.com?x=1",
                "COURIER_SECRET_BOTH": "v", "UNRELATED_DESTINATIONS": "not a binding at all",
            ]
            let problems = SecretResolver(environment: environment, directory: directory).startupProblems()
            #expect(problems.count == 3, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("COURIER_SECRET_BAD_DESTINATIONS: ") && $0.contains("?x=1") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix(directory + "/pathy.destinations: ") && $0.contains("/hooks") }, "\(problems)")
            #expect(problems.contains { $0.contains("\"both\" is ambiguous") }, "\(problems)")

            let clean = SecretResolver(environment: ["COURIER_SECRET_OK": "v", "COURIER_SECRET_OK_DESTINATIONS": "*"], directory: nil)
            #expect(clean.startupProblems().isEmpty)
        }
    }
}
