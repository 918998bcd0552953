import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Migration 0007 rewrote the value domains' regular expressions as cheaper checks.
/// Each domain must still accept exactly what 0001's pattern accepted (the one
/// intended differences, a URL with an empty host after a second '://' and, since 0010,
/// a URL with whitespace or control characters, are listed).
@Suite struct ValueCheckTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var domain: String
        var pattern: String
        var caseInsensitive = false
        var values: [String]
        var testDescription: String { domain }
    }

    static let cases: [Case] = [
        Case(domain: "courier.job_kind", pattern: "^[a-z][a-z0-9_.-]{0,63}$", values: [
            "http", "noop", "a", "a.b-c_d9", "x" + String(repeating: "y", count: 63), "x" + String(repeating: "y", count: 64),
            "", "Http", "9x", "_x", "http ", "ht\ntp", "http\n", "ümlaut", "a/b", "-a",
        ]),
        Case(domain: "courier.queue_name", pattern: "^[A-Za-z0-9_.:-]{1,64}$", values: [
            "default", "Q", "a:b.c-d_e", String(repeating: "q", count: 64), String(repeating: "q", count: 65),
            "", " ", "a b", "a\n", "\nb", "é", "a/b", "a\tb", "-", ":",
        ]),
        Case(domain: "courier.http_method", pattern: "^[A-Z][A-Z0-9_-]{0,19}$", values: [
            "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "M-SEARCH", "A" + String(repeating: "B", count: 19),
            "A" + String(repeating: "B", count: 20), "get", "", "1GET", "GET ", "G ET", "-GET", "GET\n",
        ]),
        Case(domain: "courier.http_url", pattern: "^https?://[^/?#]+", caseInsensitive: true, values: [
            "http://a", "https://example.com/x?y#z", "HTTP://A", "HtTpS://b:8080", "http://[::1]/", "http://a b",
            "http:/a", "http//a", "ftp://a", "http://", "https:///x", "http://?q", "http://#f", " http://a", "xhttp://a",
            "https", "http", "http:", "http:a://b", "https://" + String(repeating: "a", count: 8184), "https://" + String(repeating: "a", count: 8185),
            "http://ü.example", "http://\n",
        ]),
    ]

    @Test(arguments: cases)
    func everyDomainAcceptsWhatItsOldPatternAccepted(_ check: Case) throws {
        try CourierTestDatabase.with { (_, db) throws in
            for value in check.values {
                let operatorName = check.caseInsensitive ? "~*" : "~"
                let old = try db.query(PostgresQuery(unsafeSQL: "select $1::text \(operatorName) $2::text", binds: [value, check.pattern]))
                    .rows[0].decode(0, as: Bool.self)
                // 0010 refuses whitespace and control characters in URLs on purpose (issue 18).
                let hasWhitespaceOrControl = value.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
                let oldAccepted = old && (check.domain != "courier.http_url" || (value.count <= 8192 && !hasWhitespaceOrControl))
                let newAccepted: Bool
                do {
                    _ = try db.query(PostgresQuery(unsafeSQL: "select $1::text::\(check.domain)", binds: [value]))
                    newAccepted = true
                } catch let error as PostgresError {
                    #expect(error.sqlState == "23514", "\(check.domain) \(value.debugDescription): \(error)")
                    newAccepted = false
                }
                #expect(newAccepted == oldAccepted, "\(check.domain) \(value.prefix(40).debugDescription)")
            }
        }
    }

    @Test func aSecondSchemeSeparatorNoLongerHidesAnEmptyHost() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let value = "http://://x"
            #expect(try db.query("select \(value) ~* '^https?://[^/?#]+'").rows[0].decode(0, as: Bool.self), "0001 took it")
            #expect(throws: PostgresError.self) { try db.query("select \(value)::text::courier.http_url") }
        }
    }
}
