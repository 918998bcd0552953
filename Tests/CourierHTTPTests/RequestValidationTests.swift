import CourierCore
import Foundation
import Testing
@testable import CourierHTTP

@Suite("Request validation and configuration")
struct RequestValidationTests {
    @Test func headerValueWithLineBreakIsRefusedWithoutEchoingIt() async throws {
        let transport = try makeTransport()
        defer { transport.shutdown() }
        let secret = "Bearer s3cr3t\r\nX-Injected: 1"

        let outcome = await transport.send(HTTPRequest(
            url: "http://127.0.0.1:1/", headers: [HTTPHeader(name: "Authorization", value: secret)]
        ))

        let reason = try #require(outcome.blockedReason, "got \(outcome)")
        #expect(reason.contains("Authorization"))
        #expect(!reason.contains("s3cr3t"))
    }

    @Test(arguments: ["", "GE T", "GET\r\n", "POST:"])
    func invalidMethodsAreRefused(method: String) {
        let reason = RequestValidation.refusal(for: HTTPRequest(method: method, url: "http://example.com/"))
        #expect(reason == "method is not a valid HTTP method token")
    }

    @Test func invalidHeaderNameIsRefused() {
        let request = HTTPRequest(url: "http://example.com/", headers: [HTTPHeader(name: "Bad Name", value: "v")])
        #expect(RequestValidation.refusal(for: request) == "header name is not a valid HTTP token")
    }

    /// The scheme rule as it reads, on Characters: the first ":" ends the scheme, which is http
    /// or https in any case, and "://" follows.
    static func schemeRuleAccepts(_ url: String) -> Bool {
        guard let colon = url.firstIndex(of: ":") else { return false }
        let scheme = url[..<colon].lowercased()
        return (scheme == "http" || scheme == "https") && url[colon...].hasPrefix("://")
    }

    /// The byte-level fast path accepts only what the rule accepts, and with it the check
    /// accepts exactly what the rule does (non-ASCII after "//" is left to the rule).
    @Test(arguments: ["http://a.example/", "HTTPS://a.example", "hTtP://", "https://", "http:/a", "http//a", "httpx://a",
                      "https:", "http", "h", "", "ftp://x", "file:///etc/passwd", "javascript:alert(1)", " http://a",
                      "http://\u{301}x", "http:\u{301}//x", "https://\u{E9}.example/", "\u{FF48}ttp://a", "http://a:80/p:q",
                      "HTTP://A/", "https:///", "http:///x"])
    func theSchemeFastPathAgreesWithTheRule(url: String) {
        let rule = Self.schemeRuleAccepts(url)
        if RequestValidation.startsWithHTTPScheme(url) { #expect(rule, "the fast path accepted \(url.debugDescription)") }
        #expect((RequestValidation.schemeRefusal(url) == nil) == rule, "\(url.debugDescription)")
    }

    @Test func nonPositiveTimeoutsAreRefusedByName() {
        #expect(RequestValidation.refusal(for: HTTPRequest(url: "http://e.com/", timeout: .zero)) == "timeout must be greater than zero")
        #expect(RequestValidation.refusal(for: HTTPRequest(url: "http://e.com/", connectTimeout: .milliseconds(-1)))
                == "connectTimeout must be greater than zero")
    }

    @Test func validRequestPasses() {
        let request = HTTPRequest(
            method: "POST", url: "https://example.com/hook",
            headers: [HTTPHeader(name: "Idempotency-Key", value: "k"), HTTPHeader(name: "X-Empty", value: "")],
            body: [1, 2, 3]
        )
        #expect(RequestValidation.refusal(for: request) == nil)
    }

    @Test func millisecondsRoundUpAndNeverReachZero() {
        #expect(RequestValidation.milliseconds(.seconds(2)) == 2000)
        #expect(RequestValidation.milliseconds(.milliseconds(250)) == 250)
        #expect(RequestValidation.milliseconds(.microseconds(1500)) == 2)
        #expect(RequestValidation.milliseconds(.nanoseconds(1)) == 1)
        #expect(RequestValidation.milliseconds(.seconds(Int64.max)) == Int.max)
    }

    @Test(arguments: [
        (CurlTransport.Configuration(maxResponseBodyBytes: -1), "maxResponseBodyBytes"),
        (CurlTransport.Configuration(maxHostConnections: -1), "maxHostConnections"),
        (CurlTransport.Configuration(maxTotalConnections: -5), "maxTotalConnections"),
        (CurlTransport.Configuration(maxCachedConnections: 0), "maxCachedConnections"),
        (CurlTransport.Configuration(userAgent: "a\r\nb"), "userAgent"),
        (CurlTransport.Configuration(driverThreads: 0), "driverThreads"),
    ])
    func badConfigurationNamesTheField(configuration: CurlTransport.Configuration, field: String) {
        do {
            _ = try CurlTransport(configuration: configuration)
            Issue.record("expected an error for \(field)")
        } catch let error as CurlTransportError {
            #expect(error.field == field)
            #expect(error.description.contains(field))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func defaultConfigurationIsDocumented() {
        let c = CurlTransport.Configuration()
        #expect(c.maxResponseBodyBytes == 1 << 20)
        #expect(c.allowPrivateNetworks == false)
        #expect(c.userAgent == "courier/0.1")
        #expect(c.driverThreads == min(2, ProcessInfo.processInfo.activeProcessorCount))
        #expect(c.addressGuard("127.0.0.1") == "in loopback 127.0.0.0/8")
        #expect(c.addressGuard("8.8.8.8") == nil)
    }
}
