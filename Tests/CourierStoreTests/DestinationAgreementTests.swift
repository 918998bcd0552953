import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 43 items 3 and 10: one canonical destination at every door. Each spelling goes
/// through Swift (`Destination.derive`, `Destination.canonicalKey`: jobctl, NDJSON, the Swift
/// API) and through SQL (`courier.destination_of`, `courier.destination_key`: courier.enqueue,
/// the insert trigger, destination_set/pause); both must give the same key, or both refuse.
@Suite struct DestinationAgreementTests {
    /// URL → its destination, or nil where every door refuses it.
    static let urls: [(String, String?)] = [
        ("https://api.example.com/x", "https://api.example.com:443"),
        ("HTTPS://Api.Example.COM:443/x", "https://api.example.com:443"),
        ("https://api.example.com:0443/x", "https://api.example.com:443"),
        ("http://127.0.0.1:09731/hook", "http://127.0.0.1:9731"),
        ("http://127.0.0.1:00080", "http://127.0.0.1:80"),
        ("https://api.example.com.:443/x", "https://api.example.com:443"),
        ("https://api.example.com./x", "https://api.example.com:443"),
        ("http://host:/x", "http://host:80"),
        ("http://a_b-c.example?q=1", "http://a_b-c.example:80"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("http://[2001:DB8:0:0:0:0:0:1]/x", "http://[2001:db8::1]:80"),
        ("http://10.0.0.1#frag", "http://10.0.0.1:80"),
        ("http://api.example.com..:80/", nil),
        ("http://.example.com/", nil),
        ("http://api.example.com:65536/", nil),
        ("http://api.example.com:0/", nil),
        ("http://api.example.com:123456/", nil),
        ("http://api.example.com:80abc/", nil),
        ("http://%70artner.example/", nil),
        ("http://pаrtner.example/", nil),  // a Cyrillic а
        ("http://2130706433/", nil),
        ("http://0x7f000001.1/", "http://0x7f000001.1:80"),  // a name: the SSRF guard judges its address at connect time
        ("http://127.000.000.001/", nil),
        ("http://1.2.3.4./", nil),
        ("http://1.2.3/", nil),
        ("http://[1.2.3.4]/", nil),
        ("http://[fe80::1%25eth0]/", nil),
        ("http://user:pw@api.example.com/", nil),
        ("http://api.example.com\\@evil.example/", nil),
        ("ftp://api.example.com/", nil),
        ("http:///x", nil),
    ]

    @Test func swiftAndSQLReadEveryURLTheSameWay() throws {
        try CourierTestDatabase.with { _, db in
            for (url, expected) in Self.urls {
                let swift = try? Destination.derive(fromURL: url)
                let sql = try db.query("select courier.destination_of(\(url))").rows[0].decode(0, as: String?.self)
                #expect(swift == expected, "Swift: \(url) → \(swift ?? "refused")")
                #expect(sql == expected, "SQL: \(url) → \(sql ?? "refused")")
            }
        }
    }

    static let keys: [(String, String)] = [
        ("https://partner.example.com:0443/billing", "https://partner.example.com:443/billing"),
        ("HTTPS://Partner.Example.com.:443/billing/eu", "https://partner.example.com:443/billing/eu"),
        ("https://partner.example.com:443/", "https://partner.example.com:443"),
        ("https://partner.example.com:443", "https://partner.example.com:443"),
        ("https://partner.example.com:443?tenant=4", "https://partner.example.com:443?tenant=4"),
        ("https://[::1]:8443/a", "https://[::1]:8443/a"),
        // Without a port: a URL, whose key is its origin (a pasted URL names its destination).
        ("HTTPS://Partner.Example.com./billing/eu", "https://partner.example.com:443"),
        ("https://partner.example.com/hooks?x=1", "https://partner.example.com:443"),
        ("job:report.build", "job:report.build"),
        ("partner-billing", "partner-billing"),
        ("http://%70artner.example/x", "http://%70artner.example/x"),  // not a URL key: a label, kept
    ]

    @Test func swiftAndSQLWriteEveryKeyTheSameWay() throws {
        try CourierTestDatabase.with { _, db in
            for (key, expected) in Self.keys {
                #expect(Destination.canonicalKey(key) == expected, "Swift: \(key)")
                let sql = try db.query("select courier.destination_canonical(\(key))").rows[0].decode(0, as: String.self)
                #expect(sql == expected, "SQL: \(key) → \(sql)")
            }
        }
    }

    /// The attack of item 3: jobs spelled `:09731`, `:0443` or with a trailing dot were
    /// stored under keys no policy named, and sent to a paused destination. Every door now
    /// stores the canonical key, so the pause holds them all.
    @Test func everySpellingOfAPausedDestinationIsHeld() throws {
        try CourierTestDatabase.with { database, admin in
            _ = try admin.query("select courier.destination_pause('http://127.0.0.1:9731', true)")
            let login = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let enqueuer = try login.connect()
            defer { enqueuer.close() }
            for url in ["http://127.0.0.1:09731/a", "HTTP://127.0.0.1:9731/b", "http://127.0.0.1:09731?c"] {
                _ = try enqueuer.query("select courier.enqueue(url => \(url))")
            }
            var request = EnqueueRequest(url: "http://127.0.0.1:09731/copy")
            _ = try JobsTable.enqueueMany([request], on: admin)
            request.destination = "HTTP://127.0.0.1:09731/"
            _ = try JobsTable.enqueueMany([request], on: admin)
            let rows = try admin.query("select destination, gated from courier.jobs order by id").rows
            #expect(rows.count == 5)
            for row in rows {
                #expect(try row.decode(0, as: String.self) == "http://127.0.0.1:9731")
                #expect(try row.decode(1, as: Bool.self), "a job of the paused destination is held")
            }
        }
    }

    /// The attack of item 3: a sub-key no operator made (`scheme://host:port/anything`)
    /// was a key that no pause or limit could reach. An enqueuer may now use only sub-keys an
    /// operator declared, operators address them, and an origin's pause covers them.
    @Test func subKeysAreDeclaredByOperatorsAndCoveredByTheirOriginsPause() throws {
        try CourierTestDatabase.with { database, admin in
            let login = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let enqueuer = try login.connect()
            defer { enqueuer.close() }
            #expect(sqlState {
                _ = try enqueuer.query("select courier.enqueue(url => 'https://partner.example.com/x', destination => 'https://partner.example.com:443/mine')")
            } == "42501", "an undeclared sub-key is refused")

            // Declared (the path is kept: operators address sub-keys), then the origin paused.
            let declared = try admin.query("select destination from courier.destination_set('https://Partner.example.com:0443/billing')")
            #expect(try declared.rows[0].decode(0, as: String.self) == "https://partner.example.com:443/billing")
            _ = try admin.query("select courier.destination_pause('https://partner.example.com', true)")
            _ = try enqueuer.query("select courier.enqueue(url => 'https://partner.example.com/x', destination => 'https://partner.example.com:0443/billing')")
            let row = try admin.query("select destination, gated from courier.jobs").rows[0]
            #expect(try row.decode(0, as: String.self) == "https://partner.example.com:443/billing")
            #expect(try row.decode(1, as: Bool.self), "the origin's pause holds its sub-key's jobs")

            // A sub-key declared while its origin is paused starts paused; a resume frees both.
            let late = try admin.query("select paused from courier.destination_set('https://partner.example.com:443/late')")
            #expect(try late.rows[0].decode(0, as: Bool.self))
            _ = try admin.query("select courier.destination_pause('https://partner.example.com', false)")
            let paused = try admin.query("select count(*)::int from courier.destinations where paused").rows[0].decode(0, as: Int.self)
            #expect(paused == 0)
            // A sub-key can be paused on its own without touching its origin.
            _ = try admin.query("select courier.destination_pause('https://partner.example.com:443/billing', true)")
            let states = try admin.query("select destination, paused from courier.destinations order by destination").rows
                .map { (try $0.decode(0, as: String.self), try $0.decode(1, as: Bool.self)) }
            #expect(states.map(\.0) == ["https://partner.example.com:443", "https://partner.example.com:443/billing",
                                        "https://partner.example.com:443/late"])
            #expect(states.map(\.1) == [false, true, false])
        }
    }

    /// Item 10: the doors that disagreed. CR/LF in an idempotency key reached the send; a
    /// 20 MB args object was stored against the 16 MiB body limit.
    @Test func controlCharactersInKeysAndOversizedArgsAreRefusedAtEveryDoor() throws {
        try CourierTestDatabase.with { (_: TestDatabase, admin: PostgresConnection) throws in
            #expect(sqlState {
                _ = try admin.query("select courier.enqueue(url => 'https://a.example/x', idempotency_key => \("k\r\nX-Injected: 1"))")
            } == "23514")
            var request = EnqueueRequest(url: "https://a.example/x")
            request.idempotencyKey = .custom("k\r\nX-Injected: 1")
            #expect(throws: ValidationError.self) { try request.validate() }
            let big = "{\"blob\":\"" + String(repeating: "a", count: 16_777_216) + "\"}"
            #expect(sqlState {
                _ = try admin.query("select courier.enqueue_job('report.build', \(big)::jsonb)")
            } == "23514")
            #expect(try admin.query("select count(*)::int from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}
