import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 18 items 4 and 9: one rule for a job's headers at every door. Each case goes
/// through the Swift check (`EnqueueRequest.validate`, what jobctl and NDJSON use), through
/// `courier.enqueue`, and through COPY (`JobsTable.enqueueMany`, where only the domain
/// checks); all three must agree, at the limits and one past them.
@Suite struct HeaderRulesAgreementTests {
    typealias Headers = [(name: String, value: EnqueueRequest.HeaderValue)]

    static func many(_ count: Int) -> Headers { (0..<count).map { ("X-H\($0)", .literal("v")) } }

    /// Headers whose names plus values total exactly `bytes`.
    static func totalling(_ bytes: Int) -> Headers {
        let name = "X-Big"
        return [(name, .literal(String(repeating: "a", count: bytes - name.utf8.count)))]
    }

    static let cases: [(String, Headers, Bool)] = [
        ("no headers", [], true),
        ("the maximum count", many(HeaderRules.maximumCount), true),
        ("one more than the maximum count", many(HeaderRules.maximumCount + 1), false),
        ("exactly the maximum size", totalling(HeaderRules.maximumTotalBytes), true),
        ("one byte over the maximum size", totalling(HeaderRules.maximumTotalBytes + 1), false),
        ("a secret name counts towards the size",
         [("X-Big", .literal(String(repeating: "a", count: HeaderRules.maximumTotalBytes - 15 + 1))), ("X-Sec", .secret(name: "ABCDE"))], false),
        ("a tab in a value", [("X-A", .literal("a\tb"))], true),
        ("ESC in a value", [("X-A", .literal("a\u{1B}[2Jb"))], false),
        ("DEL in a value", [("X-A", .literal("a\u{7F}"))], false),
        ("a bell in a value", [("X-A", .literal("\u{07}"))], false),
        ("CR LF in a value", [("X-A", .literal("a\r\nX-Injected: 1"))], false),
        ("non-ASCII in a value", [("X-A", .literal("grüße"))], true),
        ("names that differ only in case", [("X-Token", .literal("a")), ("x-token", .literal("b"))], false),
        ("an empty secret name", [("Authorization", .secret(name: ""))], false),
        ("a secret name with a slash", [("Authorization", .secret(name: "../etc/passwd"))], false),
        ("a secret name of 129 characters", [("Authorization", .secret(name: String(repeating: "s", count: 129)))], false),
        ("a good secret reference", [("Authorization", .secret(name: "PARTNER_TOKEN"))], true),
    ]

    /// One door's verdict: nil when it accepted, else what it said.
    func swiftVerdict(_ request: EnqueueRequest) -> String? {
        do { try request.validate(); return nil } catch { return error.description }
    }

    func sqlVerdict(_ request: EnqueueRequest, on db: PostgresConnection) -> String? {
        do {
            _ = try db.query("select courier.enqueue(url => \(request.url), headers => \(request.headersJSON)::jsonb)")
            return nil
        } catch let error as PostgresError {
            return "\(error.sqlState ?? "?"): \(error)"
        } catch { return "\(error)" }
    }

    func copyVerdict(_ request: EnqueueRequest, on db: PostgresConnection) -> String? {
        do { _ = try JobsTable.enqueueMany([request], on: db); return nil } catch { return "\(error)" }
    }

    @Test func swiftSQLAndCOPYAgreeOnEveryCase() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for (label, headers, accepted) in Self.cases {
                var request = EnqueueRequest(url: "https://hooks.example/agree")
                request.headers = headers
                let verdicts = [("swift", swiftVerdict(request)), ("courier.enqueue", sqlVerdict(request, on: db)),
                                ("copy", copyVerdict(request, on: db))]
                for (door, verdict) in verdicts {
                    #expect((verdict == nil) == accepted, "\(label): \(door) \(verdict.map { "refused: \($0)" } ?? "accepted")")
                    if let verdict { #expect(verdict.contains("headers"), "\(label): \(door) must name the field: \(verdict)") }
                }
            }
        }
    }

    /// Objects a Swift caller cannot build, through the SQL doors only.
    /// `courier.headers_plainly_valid` (0029) is a shortcut the domain tries before the
    /// exact `courier.check_headers`: it may send a good map on to the exact check, but it
    /// must never pass a map the exact check refuses. Every case above, and 3,000 random
    /// maps built from the characters and shapes the rules care about.
    @Test func theShortcutNeverPassesAMapTheExactCheckRefuses() throws {
        try CourierTestDatabase.with { (_, db) throws in
            func verdicts(_ json: String) throws -> (shortcut: Bool, exact: Bool) {
                let shortcut = try db.query("select courier.headers_plainly_valid(\(json)::jsonb)").rows[0].decode(0, as: Bool.self)
                let exact = sqlState { _ = try db.query("select courier.check_headers(\(json)::jsonb)") } == nil
                return (shortcut, exact)
            }
            var maps = Self.cases.map { _, headers, _ -> String in
                var request = EnqueueRequest(url: "https://hooks.example/x")
                request.headers = headers
                return request.headersJSON
            }
            var rng = SplitMix64(seed: 18)
            let names = ["X-A", "x-a", "Content-Type", "content-type", "Authorization", "X Bad", "X\"Q", "", "X-Ü", "x_y.z~",
                         String(repeating: "N", count: 300)]
            let strings: [Any] = ["v", "application/json", "a\tb", "a\"b", "a\\b", "a\u{7F}", "a\u{1B}", "a\r\n", "grüße", "",
                                  String(repeating: "w", count: 200), 1, true, NSNull(), ["a"]]
            let secretNames = ["PARTNER_TOKEN", "", "a/b", String(repeating: "s", count: 128), String(repeating: "s", count: 129),
                               String(repeating: "t", count: 70)]
            for _ in 0..<3_000 {
                var map: [String: Any] = [:]
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    let name = names.randomElement(using: &rng)!
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<6: map[name] = strings.randomElement(using: &rng)!
                    case 6..<9: map[name] = ["secret": secretNames.randomElement(using: &rng)!]
                    default: map[name] = ["secret": "PARTNER_TOKEN", "extra": "x"]
                    }
                }
                let data = try JSONSerialization.data(withJSONObject: map)
                maps.append(String(decoding: data, as: UTF8.self))
            }
            var passedByTheShortcut = 0
            for json in maps {
                let (shortcut, exact) = try verdicts(json)
                #expect(!shortcut || exact, "the shortcut passed a map the exact check refuses: \(json)")
                if shortcut { passedByTheShortcut += 1 }
            }
            // And it does answer the usual maps, or it would save nothing.
            #expect(passedByTheShortcut > 100, "only \(passedByTheShortcut) maps took the shortcut")
            for usual in [#"{"Content-Type": "application/json", "X-Event": "order.created", "Authorization": {"secret": "PARTNER_TOKEN"}}"#,
                          #"{"X-Request-Id": "3f1c-77", "User-Agent": "courier/1.0 (+https://example.com)"}"#] {
                #expect(try verdicts(usual) == (true, true), "\(usual)")
            }
        }
    }

    @Test(arguments: [
        #"{"Authorization": {"secret": "A", "extra": 1}}"#,
        #"{"Authorization": {"secret": ""}}"#,
        #"{"Authorization": {"secret": 5}}"#,
        #"{"Authorization": {}}"#,
        #"{"X-A": 1}"#,
        #"{"X-A": "\u001b[31m"}"#,
        #"{"Bad Name": "v"}"#,
    ])
    func sqlRefusesMalformedHeaderObjects(headers: String) throws {
        try CourierTestDatabase.with { (_, db) throws in
            let error = #expect(throws: PostgresError.self) {
                try db.query("select courier.enqueue(url => 'https://hooks.example/x', headers => \(headers)::jsonb)")
            }
            #expect(error?.sqlState == "22023", "\(String(describing: error))")
            #expect(error.map { "\($0)" }?.contains("headers") == true, "\(String(describing: error))")
            // And a direct INSERT by a privileged role meets the same domain rule.
            #expect(throws: PostgresError.self) {
                try db.query("insert into courier.jobs (destination, url, headers) values ('https://hooks.example:443', 'https://hooks.example/x', \(headers)::jsonb)")
            }
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}

/// Issue 18 item 9: the SQL doors are as strict as jobctl.
@Suite struct SQLStrictnessTests {
    @Test(arguments: ["https://hooks.example/a b", "https://hooks.example/a\tb", "https://hooks.example/a\r\nb",
                      "https://hooks.example/\u{1B}[2J", "https://hooks.example/a\u{7F}"])
    func urlsWithWhitespaceOrControlCharactersAreRefused(url: String) throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(throws: PostgresError.self) { try db.query("select courier.enqueue(url => \(url))") }
            #expect(throws: ValidationError.self) { try EnqueueRequest(url: url).validate() }
        }
    }

    @Test(arguments: ["partner\r\nx", "partner a", "partner\tb", "\u{1B}[2J"])
    func destinationsWithWhitespaceOrControlCharactersAreRefused(destination: String) throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(throws: PostgresError.self) {
                try db.query("select courier.enqueue(url => 'https://hooks.example/x', destination => \(destination))")
            }
            #expect(throws: PostgresError.self) {
                try db.query("select courier.enqueue_job(kind => 'report', destination => \(destination))")
            }
            #expect(try db.query("select count(*)::bigint from courier.breakers").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test(arguments: ["run_at", "deadline"])
    func infiniteTimesAreRefused(field: String) throws {
        try CourierTestDatabase.with { (_, db) throws in
            for value in ["infinity", "-infinity"] {
                let error = #expect(throws: PostgresError.self) {
                    if field == "run_at" {
                        try db.query("select courier.enqueue(url => 'https://hooks.example/x', run_at => \(value)::timestamptz)")
                    } else {
                        try db.query("select courier.enqueue(url => 'https://hooks.example/x', deadline => \(value)::timestamptz)")
                    }
                }
                #expect(error.map { "\($0)" }?.contains(field) == true, "\(field) \(value): \(String(describing: error))")
            }
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
            // What -infinity used to break: stats over the queue still answer.
            _ = try db.query("select min(run_at), max(run_at) from courier.jobs")
        }
    }

    @Test func anEmptyMethodIsRefusedInSQLAndSwift() throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(throws: PostgresError.self) { try db.query("select courier.enqueue(url => 'https://hooks.example/x', method => '')") }
            var request = EnqueueRequest(url: "https://hooks.example/x")
            request.method = ""
            #expect(throws: ValidationError.self) { try request.validate() }
        }
    }
}
