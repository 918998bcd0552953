import CourierCore
import Foundation
import Testing

/// One row of the classifier table.
struct ClassifierCase: Sendable, CustomTestStringConvertible {
    var name: String
    var outcome: TransportOutcome
    var expect: String? = nil
    var succeeded: Bool = false
    var errorClass: ErrorClass?
    var status: Int?
    var delivered: Bool
    var retryable: Bool
    var retryAfter: Duration? = nil
    var breaker: Bool
    var messageContains: [String] = []

    var testDescription: String { name }
}

private func response(_ status: Int, _ headers: [(String, String)] = [], body: String = "", truncated: Bool = false) -> TransportOutcome {
    .response(HTTPResponseSummary(
        status: status,
        headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) },
        bodyPrefix: Array(body.utf8),
        bodyTruncated: truncated))
}

private let now = Date(timeIntervalSince1970: 1_700_000_000)
private let captivePortal = "<!DOCTYPE html>\n<html><head><title>Hotel WiFi login</title></head><body>Please accept the terms</body></html>"

private let cases: [ClassifierCase] = [
    ClassifierCase(name: "DNS failure", outcome: .notSent("could not resolve host"), errorClass: .transport, delivered: false, retryable: true, breaker: true, messageContains: ["not sent", "resolve"]),
    ClassifierCase(name: "SSRF refusal", outcome: .blocked("SSRF guard: 127.0.0.1 is loopback"), errorClass: .client, delivered: false, retryable: false, breaker: false, messageContains: ["refused to send", "SSRF guard"]),
    ClassifierCase(name: "refused by configuration", outcome: .refusedByConfiguration("destination address 10.0.0.1 is private; pass --allow-private-networks to allow"), errorClass: .client, delivered: false, retryable: false, breaker: false, messageContains: ["this worker may not send it", "allow-private-networks"]),
    ClassifierCase(name: "timeout before connect", outcome: .timedOut(connected: false, "connect timeout"), errorClass: .timeout, delivered: false, retryable: true, breaker: true, messageContains: ["before a connection"]),
    ClassifierCase(name: "timeout after connect", outcome: .timedOut(connected: true, "no answer in 5s"), errorClass: .timeout, delivered: true, retryable: true, breaker: true, messageContains: ["after the connection"]),
    ClassifierCase(name: "connection lost", outcome: .connectionLost("reset by peer"), errorClass: .connectionLost, delivered: true, retryable: true, breaker: true, messageContains: ["connection lost"]),
    ClassifierCase(name: "cancelled in flight", outcome: .cancelled(maybeSent: true), errorClass: .cancelled, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "cancelled before send", outcome: .cancelled(maybeSent: false), errorClass: .cancelled, delivered: false, retryable: false, breaker: false),
    ClassifierCase(name: "200 no expectation", outcome: response(200, [("Content-Type", "text/html")], body: captivePortal), succeeded: true, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "201", outcome: response(201), succeeded: true, status: 201, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "200 JSON as expected", outcome: response(200, [("content-type", "Application/JSON; charset=utf-8")], body: " {\"ok\": true}"), expect: "application/json", succeeded: true, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "200 JSON scalar", outcome: response(200, [("Content-Type", "application/json")], body: "42"), expect: "application/json", succeeded: true, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "200 problem+json satisfies json", outcome: response(200, [("Content-Type", "application/problem+json")], body: "{}"), expect: "application/json", succeeded: true, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "200 truncated JSON", outcome: response(200, [("Content-Type", "application/json")], body: "[1,2,3,", truncated: true), expect: "application/json", succeeded: true, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["only its content type and start were checked"]),
    ClassifierCase(name: "200 text wildcard", outcome: response(200, [("Content-Type", "text/plain")], body: "ok"), expect: "text/*", succeeded: true, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "204 with expectation", outcome: response(204), expect: "application/json", succeeded: true, status: 204, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "captive portal HTML", outcome: response(200, [("Content-Type", "text/html; charset=UTF-8")], body: captivePortal), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["HTTP 200", "text/html; charset=UTF-8", "application/json", "<!DOCTYPE html>\\n<html>", "…"]),
    ClassifierCase(name: "JSON type but not JSON", outcome: response(200, [("Content-Type", "application/json")], body: "{\"a\": "), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["not valid JSON", "{\\\"a\\\": "]),
    ClassifierCase(name: "truncated HTML labelled JSON", outcome: response(200, [("Content-Type", "application/json")], body: "<html>", truncated: true), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["not valid JSON"]),
    ClassifierCase(name: "empty body labelled JSON", outcome: response(200, [("Content-Type", "application/json")]), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "missing content type", outcome: response(200, body: "{}"), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["no Content-Type"]),
    ClassifierCase(name: "binary body escaped", outcome: .response(HTTPResponseSummary(status: 200, headers: [HTTPHeader(name: "Content-Type", value: "image/png")], bodyPrefix: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A])), expect: "application/json", errorClass: .invalidResponse, status: 200, delivered: true, retryable: false, breaker: false, messageContains: ["\\x89PNG\\r\\n"]),
    ClassifierCase(name: "304", outcome: response(304), expect: "application/json", succeeded: true, status: 304, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "301 redirect", outcome: response(301, [("Location", "https://elsewhere.example/secret?token=abc")]), errorClass: .client, status: 301, delivered: true, retryable: false, breaker: false, messageContains: ["redirect to", "https://elsewhere.example/secret?...", "not followed"]),
    ClassifierCase(name: "501 not implemented", outcome: response(501), errorClass: .server, status: 501, delivered: true, retryable: false, breaker: false, messageContains: ["not implemented"]),
    ClassifierCase(name: "307 redirect", outcome: response(307), errorClass: .client, status: 307, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "400", outcome: response(400), errorClass: .client, status: 400, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "401", outcome: response(401, [("WWW-Authenticate", "Bearer realm=x")]), errorClass: .client, status: 401, delivered: true, retryable: false, breaker: false, messageContains: ["never repeated"]),
    ClassifierCase(name: "403", outcome: response(403), errorClass: .client, status: 403, delivered: true, retryable: false, breaker: false, messageContains: ["never repeated"]),
    ClassifierCase(name: "404", outcome: response(404), errorClass: .client, status: 404, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "404 ignores Retry-After", outcome: response(404, [("Retry-After", "5")]), errorClass: .client, status: 404, delivered: true, retryable: false, breaker: false),
    ClassifierCase(name: "408", outcome: response(408), errorClass: .server, status: 408, delivered: false, retryable: true, breaker: true),
    ClassifierCase(name: "425", outcome: response(425), errorClass: .server, status: 425, delivered: false, retryable: true, breaker: true),
    ClassifierCase(name: "429 bare", outcome: response(429), errorClass: .throttled, status: 429, delivered: false, retryable: true, breaker: false),
    ClassifierCase(name: "429 Retry-After seconds", outcome: response(429, [("retry-after", "30")]), errorClass: .throttled, status: 429, delivered: false, retryable: true, retryAfter: .seconds(30), breaker: false, messageContains: ["Retry-After 30s"]),
    ClassifierCase(name: "503 Retry-After", outcome: response(503, [("Retry-After", "2")]), errorClass: .throttled, status: 503, delivered: false, retryable: true, retryAfter: .seconds(2), breaker: false),
    ClassifierCase(name: "503 Retry-After date", outcome: response(503, [("Retry-After", "Wed, 15 Nov 2023 00:13:20 GMT")]), errorClass: .throttled, status: 503, delivered: false, retryable: true, retryAfter: .seconds(7200), breaker: false),
    ClassifierCase(name: "503 bare", outcome: response(503), errorClass: .server, status: 503, delivered: false, retryable: true, breaker: true),
    ClassifierCase(name: "503 garbage Retry-After", outcome: response(503, [("Retry-After", "soon")]), errorClass: .server, status: 503, delivered: false, retryable: true, breaker: true),
    ClassifierCase(name: "500", outcome: response(500), errorClass: .server, status: 500, delivered: true, retryable: true, breaker: true),
    ClassifierCase(name: "502", outcome: response(502), errorClass: .server, status: 502, delivered: true, retryable: true, breaker: true),
    ClassifierCase(name: "504 with Retry-After", outcome: response(504, [("Retry-After", "10")]), errorClass: .server, status: 504, delivered: true, retryable: true, retryAfter: .seconds(10), breaker: true),
    ClassifierCase(name: "odd status", outcome: response(799), errorClass: .server, status: 799, delivered: true, retryable: true, breaker: true, messageContains: ["unexpected status"]),
]

@Suite struct OutcomeClassifierTests {
    @Test(arguments: cases)
    func classifies(_ row: ClassifierCase) {
        let c = OutcomeClassifier.classify(row.outcome, expectContentType: row.expect, now: now)
        #expect(c.succeeded == row.succeeded)
        #expect(c.errorClass == row.errorClass)
        #expect(c.status == row.status)
        #expect(c.mayHaveBeenDelivered == row.delivered)
        #expect(c.retryable == row.retryable)
        #expect(c.retryAfter == row.retryAfter)
        #expect(c.countsAsBreakerFailure == row.breaker)
        if row.status != 501 {  // 501 is server-class but says nothing about the destination's health
            #expect(c.countsAsBreakerFailure == (c.errorClass?.countsAsBreakerFailure ?? false))
        }
        #expect(c.refusedByConfiguration == (row.name == "refused by configuration"))
        for fragment in row.messageContains {
            #expect(c.message.contains(fragment), "message \(c.message) lacks \(fragment)")
        }
    }

    @Test func permanentReasons() {
        func reason(_ outcome: TransportOutcome, expect: String? = nil) -> DeadLetterReason? {
            OutcomeClassifier.classify(outcome, expectContentType: expect, now: now).permanentReason
        }
        #expect(reason(response(404)) == .permanent)
        #expect(reason(.blocked("SSRF guard")) == .permanent)
        #expect(reason(response(302)) == .permanent)
        #expect(reason(response(200, [("Content-Type", "text/html")]), expect: "application/json") == .invalidResponse)
        #expect(reason(.cancelled(maybeSent: true)) == .cancelled)
        #expect(reason(response(200)) == nil)
        #expect(reason(response(500)) == nil)
        #expect(reason(response(501)) == .permanent)
    }

    @Test func messagesNeverContainHeaderValues() {
        let secret = "s3cr3t-value-xyz"
        let headers = [
            ("Set-Cookie", "session=\(secret)"), ("Location", "https://x.example/?t=\(secret)"),
            ("WWW-Authenticate", secret), ("X-Debug", secret), ("Retry-After", "7"),
        ]
        for status in [200, 201, 301, 302, 304, 400, 401, 403, 404, 408, 425, 429, 500, 502, 503, 504, 799] {
            for expect in [nil, "application/json"] {
                let c = OutcomeClassifier.classify(response(status, headers + [("Content-Type", "application/json")], body: "{}"), expectContentType: expect, now: now)
                #expect(!c.message.contains(secret), "status \(status): \(c.message)")
            }
        }
    }

    @Test func leaseExpiredIsMaybeDeliveredAndRetryable() {
        let c = Classification.leaseExpired()
        #expect(c.errorClass == .leaseExpired)
        #expect(c.mayHaveBeenDelivered)
        #expect(c.retryable)
        #expect(!c.countsAsBreakerFailure)
        #expect(c.permanentReason == nil)
    }
}

@Suite struct MediaTypeTests {
    @Test func parsesAndCompares() throws {
        let json = try #require(MediaType("application/json"))
        #expect(json.accepts(try #require(MediaType(" APPLICATION/Json ; charset=utf-8"))))
        #expect(json.accepts(try #require(MediaType("application/vnd.api+json"))))
        #expect(!json.accepts(try #require(MediaType("text/html"))))
        #expect(!json.accepts(try #require(MediaType("application/jsonp"))))
        #expect(try #require(MediaType("*/*")).accepts(try #require(MediaType("image/png"))))
        #expect(try #require(MediaType("text/*")).accepts(try #require(MediaType("text/csv"))))
        #expect(!(try #require(MediaType("text/*")).accepts(try #require(MediaType("image/png")))))
        #expect(MediaType("json") == nil)
        #expect(MediaType("text/") == nil)
        #expect(MediaType("a b/c") == nil)
        #expect(throws: ValidationError.self) { try MediaType.parseExpectation("html") }
    }

    @Test func onlyRefusalsBeforeSendingAreLocalRefusals() {
        let now = Date()
        #expect(OutcomeClassifier.classify(.blocked("private address"), expectContentType: nil, now: now).isLocalRefusal)
        for outcome in [response(404), response(200), response(500), TransportOutcome.notSent("connection refused"),
                        .timedOut(connected: true, "slow"), .connectionLost("reset"), .cancelled(maybeSent: false)] {
            #expect(!OutcomeClassifier.classify(outcome, expectContentType: nil, now: now).isLocalRefusal, "\(outcome)")
        }
    }
}
