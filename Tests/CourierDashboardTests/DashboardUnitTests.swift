@testable import CourierDashboard
import CourierCore
import CourierHTTPServer
import CourierStore
import CourierTestSupport
import Foundation
import Testing

@Suite struct HTMLEscapingTests {
    @Test func interpolatedValuesAreEscapedAndMarkupIsNot() {
        let hostile = #"<img src=x onerror="alert('1')">&"#
        let html: HTML = "<td title=\"\(hostile)\">\(hostile)</td>"
        #expect(html.text == "<td title=\"&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;\">&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;</td>")
        let inner: HTML = "<b>\("<i>")</b>"
        let outer: HTML = "<p>\(inner)</p>"
        #expect(outer.text == "<p><b>&lt;i&gt;</b></p>", "HTML values nest as markup, strings never do")
        let missing: String? = nil
        #expect(HTML("\(missing)").text == "")
    }
}

@Suite struct CSRFTests {
    let session = DashboardAuth.Identity(kind: .session, csrf: "abc123", label: "session x")
    let bearer = DashboardAuth.Identity(kind: .bearer, csrf: "", label: "token")

    @Test func sameOriginWithTheTokenPasses() {
        #expect(DashboardAuth.postRefusal(identity: session, origin: "http://127.0.0.1:8377", fetchSite: "same-origin",
                                          host: "127.0.0.1:8377", sentCSRF: "abc123") == nil)
        #expect(DashboardAuth.postRefusal(identity: session, origin: nil, fetchSite: nil, host: "h:1", sentCSRF: "abc123") == nil)
    }

    @Test func anotherOriginOrSiteIsRefused() {
        #expect(DashboardAuth.postRefusal(identity: session, origin: "http://evil.example", fetchSite: nil,
                                          host: "127.0.0.1:8377", sentCSRF: "abc123") != nil)
        #expect(DashboardAuth.postRefusal(identity: session, origin: "null", fetchSite: nil, host: "127.0.0.1:8377", sentCSRF: "abc123") != nil)
        #expect(DashboardAuth.postRefusal(identity: session, origin: nil, fetchSite: "cross-site", host: "h", sentCSRF: "abc123") != nil)
        #expect(DashboardAuth.postRefusal(identity: bearer, origin: "http://evil.example", fetchSite: nil, host: "h", sentCSRF: nil) != nil)
    }

    @Test func aMissingOrWrongTokenIsRefusedButBearerNeedsNone() {
        #expect(DashboardAuth.postRefusal(identity: session, origin: nil, fetchSite: nil, host: "h", sentCSRF: nil) != nil)
        #expect(DashboardAuth.postRefusal(identity: session, origin: nil, fetchSite: nil, host: "h", sentCSRF: "abc124") != nil)
        #expect(DashboardAuth.postRefusal(identity: session, origin: nil, fetchSite: nil, host: "h", sentCSRF: "") != nil)
        #expect(DashboardAuth.postRefusal(identity: bearer, origin: nil, fetchSite: nil, host: "h", sentCSRF: nil) == nil)
    }

    @Test func constantTimeComparison() {
        #expect(DashboardAuth.constantTimeEqual("secret", "secret"))
        #expect(!DashboardAuth.constantTimeEqual("secret", "secreT"))
        #expect(!DashboardAuth.constantTimeEqual("secret", "secret2"))
        #expect(!DashboardAuth.constantTimeEqual("", "x"))
    }

    @Test func loginMakesSessionsOnlyForTheToken() {
        let auth = DashboardAuth(token: "the-token-0123456789")
        #expect(auth.login(candidate: "wrong", client: "192.0.2.1") == .refused)
        let session = auth.login(candidate: "the-token-0123456789", client: "192.0.2.1").session
        #expect(session?.count == 64)
        let request = HTTPServer.Request(method: "GET", path: "/", headers: [.init("Cookie", "a=b; courier_session=\(session ?? "")")])
        #expect(auth.identify(request)?.kind == .session)
        #expect(auth.identify(HTTPServer.Request(method: "GET", path: "/"))  == nil)
        #expect(DashboardAuth(token: nil).identify(HTTPServer.Request(method: "GET", path: "/"))?.kind == .local)
    }
}

extension DashboardAuth {
    /// The identity `request` authenticates as, or nil (tests only).
    func identify(_ request: HTTPServer.Request) -> Identity? {
        if case .identified(let identity) = authenticate(request) { return identity }
        return nil
    }
}

/// Issue 43: the `Host` check runs in every mode, with `--allowed-host` for real names.
@Suite struct AllowedHostsTests {
    @Test func loopbackNamesAndASingleListenAddressAreAllowed() {
        let local = AllowedHosts(listenHost: "127.0.0.1")
        #expect(local.allows("127.0.0.1:8377"))
        #expect(local.allows("localhost:8377"))
        #expect(local.allows("LOCALHOST"))
        #expect(local.allows("[::1]:8377"))
        #expect(local.allows("127.0.0.2"))
        #expect(AllowedHosts(listenHost: "10.0.0.5").allows("10.0.0.5:8377"))
        #expect(!local.allows("evil.example:8377"))
        #expect(!local.allows(nil))
        #expect(!local.allows(""))
        #expect(!local.allows("127.0.0.1.evil.example:8377"), "a name that starts like loopback")
        #expect(!AllowedHosts(listenHost: "0.0.0.0").allows("evil.example"))
        #expect(!AllowedHosts(listenHost: "0.0.0.0").allows("0.0.0.0:8377"), "listening everywhere allows no name by itself")
        #expect(!AllowedHosts(listenHost: nil).allows("10.0.0.5:8377"))
    }

    @Test func allowedHostNamesAreServedAndNothingElse() {
        let hosts = AllowedHosts(listenHost: nil, extra: ["dash.example.com", "2001:db8::1"])
        #expect(hosts.allows("DASH.example.com:8377"))
        #expect(hosts.allows("dash.example.com"))
        #expect(hosts.allows("[2001:db8:0::1]:8377"), "addresses compare in canonical form")
        #expect(!hosts.allows("dash.example.com.evil.example"))
        #expect(!hosts.allows("example.com"))
    }

    @Test func allowedHostValuesAreCheckedAndNormalized() throws {
        #expect(try AllowedHosts.validated(" Dash.Example.com ", field: "--allowed-host") == "dash.example.com")
        #expect(try AllowedHosts.validated("[::1]", field: "--allowed-host") == "::1")
        #expect(try AllowedHosts.validated("10.0.0.5", field: "--allowed-host") == "10.0.0.5")
        for bad in ["", "https://dash.example.com", "dash.example.com:8377", "dash.example.com/x", "*.example.com", "a b"] {
            #expect(throws: ValidationError.self, "\(bad)") { try AllowedHosts.validated(bad, field: "--allowed-host") }
        }
        do {
            _ = try AllowedHosts.validated("dash:1", field: "--allowed-host")
        } catch {
            #expect(error.description.hasPrefix("--allowed-host: "))
        }
    }
}

/// Issue 43: every token source has the same minimum, through one function.
@Suite struct TokenValidationTests {
    @Test func everySourceNeedsSixteenCharacters() throws {
        #expect(DashboardAuth.minimumTokenLength == 16)
        #expect(try DashboardAuth.validatedToken("  0123456789abcdef\n", source: "X") == "0123456789abcdef")
        for source in ["--token-file", "COURIER_DASHBOARD_TOKEN"] {
            #expect(throws: ValidationError(field: source, message: "the token must be at least 16 characters")) {
                try DashboardAuth.validatedToken("0123456789abcde", source: source)
            }
            #expect(throws: ValidationError.self) { try DashboardAuth.validatedToken("x", source: source) }
        }
    }
}

/// Issue 43: failed token checks are throttled per client address and overall, on an
/// injected clock; a throttled attempt is refused before the token is looked at.
@Suite struct LoginThrottleTests {
    static func policy() -> LoginThrottle.Policy {
        var policy = LoginThrottle.Policy()
        policy.clientBurst = 3
        policy.clientRefill = .seconds(10)
        policy.globalBurst = 5
        policy.globalRefill = .seconds(60)
        policy.maximumClients = 100
        return policy
    }

    @Test func aClientsFailuresAreThrottledAndTheTokenIsNotEvenChecked() {
        let clock = ManualClock()
        let throttle = LoginThrottle(policy: Self.policy(), now: { clock.now })
        for _ in 0..<3 { #expect(throttle.attempt(client: "192.0.2.1") { false } == .failed) }
        let checked = Locked(false)
        let right = { () -> Bool in checked.withLock { $0 = true }; return true }
        #expect(throttle.attempt(client: "192.0.2.1", right) == .throttled(retryAfter: .seconds(10)))
        #expect(!checked.withLock { $0 }, "a throttled attempt is not checked, even with the right token")
        clock.advance(.seconds(9))
        #expect(throttle.attempt(client: "192.0.2.1", right) == .throttled(retryAfter: .seconds(1)))
        clock.advance(.seconds(1))
        #expect(throttle.attempt(client: "192.0.2.1", right) == .passed)
        #expect(throttle.attempt(client: "192.0.2.2") { false } == .failed, "another address has its own bucket")
    }

    @Test func theRightTokenGivesItsAttemptBack() {
        let clock = ManualClock()
        let throttle = LoginThrottle(policy: Self.policy(), now: { clock.now })
        for _ in 0..<100 { #expect(throttle.attempt(client: "192.0.2.1") { true } == .passed) }
        for _ in 0..<3 { #expect(throttle.attempt(client: "192.0.2.1") { false } == .failed) }
        #expect(throttle.attempt(client: "192.0.2.1") { true } != .passed)
    }

    @Test func everyAddressTogetherIsLimitedToo() {
        let clock = ManualClock()
        let throttle = LoginThrottle(policy: Self.policy(), now: { clock.now })
        for client in ["a", "a", "a", "b", "b"] { #expect(throttle.attempt(client: client) { false } == .failed) }
        #expect(throttle.attempt(client: "b") { true } == .throttled(retryAfter: .seconds(60)), "the shared bucket is empty")
        #expect(throttle.attempt(client: "c") { true } == .throttled(retryAfter: .seconds(60)), "a new address too")
        clock.advance(.seconds(60))
        #expect(throttle.attempt(client: "c") { false } == .failed)
        #expect(throttle.attempt(client: "b") { true } == .throttled(retryAfter: .seconds(60)))
    }

    @Test func addressesBeyondTheMaximumShareOneBucket() {
        let clock = ManualClock()
        var policy = Self.policy()
        policy.maximumClients = 2
        policy.globalBurst = 1_000
        let throttle = LoginThrottle(policy: policy, now: { clock.now })
        for client in ["a", "b"] { #expect(throttle.attempt(client: client) { false } == .failed) }
        for client in ["c", "d", "e"] { #expect(throttle.attempt(client: client) { false } == .failed) }
        #expect(throttle.attempt(client: "f") { true } == .throttled(retryAfter: .seconds(10)), "new addresses share a bucket")
        #expect(throttle.attempt(client: "a") { true } == .passed, "known ones keep theirs")
        clock.advance(.seconds(30))
        #expect(throttle.attempt(client: "f") { true } == .passed, "once full, old buckets are forgotten and make room")
    }

    @Test func retryAfterIsWholeSecondsRoundedUp() {
        #expect(LoginThrottle.retryAfterSeconds(.milliseconds(1)) == 1)
        #expect(LoginThrottle.retryAfterSeconds(.seconds(6)) == 6)
        #expect(LoginThrottle.retryAfterSeconds(.milliseconds(6001)) == 7)
        #expect(LoginThrottle.retryAfterSeconds(.zero) == 1)
    }

    @Test func dashboardAuthChecksBothLoginsAndBearerTokensThroughTheThrottle() {
        let clock = ManualClock()
        let auth = DashboardAuth(token: DashboardSessionTests.token, throttle: Self.policy(), now: { clock.now })
        let bearer = { (token: String) in
            HTTPServer.Request(method: "GET", path: "/api/stats", headers: [.init("Authorization", "Bearer \(token)")], peer: "192.0.2.7")
        }
        #expect(auth.authenticate(bearer("wrong-wrong-wrong-wrong")) == .wrongToken)
        #expect(auth.login(candidate: "wrong-wrong-wrong", client: "192.0.2.7") == .refused)
        #expect(auth.authenticate(HTTPServer.Request(method: "GET", path: "/", headers: [.init("Authorization", "Basic x")], peer: "192.0.2.7"))
                == .wrongToken, "any Authorization header is a try")
        #expect(auth.login(candidate: DashboardSessionTests.token, client: "192.0.2.7") == .throttled(retryAfter: .seconds(10)))
        #expect(auth.authenticate(bearer(DashboardSessionTests.token)) == .throttled(retryAfter: .seconds(10)))
        #expect(auth.login(candidate: DashboardSessionTests.token, client: "192.0.2.8").session != nil, "another address logs in")
    }
}

@Suite struct DashboardSessionTests {
    static let token = "the-token-0123456789"
    static func request(_ session: String?) -> HTTPServer.Request {
        HTTPServer.Request(method: "GET", path: "/", headers: [.init("Cookie", "courier_session=\(session ?? "")")])
    }

    @Test func aSessionEndsAfterItsLifetime() {
        let clock = ManualClock()
        let auth = DashboardAuth(token: Self.token, sessionLifetime: .seconds(3600), now: { clock.now })
        let session = auth.login(candidate: Self.token, client: "192.0.2.1").session
        #expect(auth.identify(Self.request(session))?.kind == .session)
        #expect(auth.cookie(session).hasSuffix("; Max-Age=3600"), "the browser drops it too")
        clock.advance(.seconds(3599))
        #expect(auth.identify(Self.request(session))?.kind == .session)
        clock.advance(.seconds(2))
        #expect(auth.identify(Self.request(session)) == nil, "an expired session must log in again")
        #expect(auth.identify(HTTPServer.Request(method: "GET", path: "/", headers: [.init("Authorization", "Bearer \(Self.token)")]))?.kind
                == .bearer, "the token itself does not expire")
    }

    @Test func loginsBeyondTheMaximumEndTheOldestSession() {
        let clock = ManualClock()
        let auth = DashboardAuth(token: Self.token, maximumSessions: 3, now: { clock.now })
        var sessions: [String?] = []
        for _ in 0..<4 {
            sessions.append(auth.login(candidate: Self.token, client: "192.0.2.1").session)
            clock.advance(.seconds(1))
        }
        #expect(auth.identify(Self.request(sessions[0])) == nil, "the oldest made room")
        #expect(sessions[1...].allSatisfy { auth.identify(Self.request($0))?.kind == .session })
    }

    @Test func loggingOutEndsTheSession() {
        let auth = DashboardAuth(token: Self.token)
        let session = auth.login(candidate: Self.token, client: "192.0.2.1").session
        auth.logout(Self.request(session))
        #expect(auth.identify(Self.request(session)) == nil)
        #expect(auth.cookie(nil).hasSuffix("Max-Age=0"))
    }
}

@Suite struct SVGChartTests {
    @Test func pathsSpanTheAreaAndScaleToTheMaximum() {
        #expect(SVGChart.linePath([]) == "")
        #expect(SVGChart.linePath([5], width: 600, height: 120) == "M0,0")
        #expect(SVGChart.linePath([0, 5, 10], width: 600, height: 120) == "M0,120 L300,60 L600,0")
        #expect(SVGChart.linePath([1, 2], maximum: 4, width: 100, height: 10) == "M0,7.5 L100,5")
        #expect(SVGChart.linePath([0, 0], width: 10, height: 10) == "M0,10 L10,10", "all zero stays at the bottom")
        #expect(SVGChart.linePath([-3, 20], maximum: 10, width: 10, height: 10) == "M0,10 L10,0", "clamped to the area")
    }

    @Test func minutesWithoutRowsAreZero() {
        let now = Date(timeIntervalSince1970: 600 + 30)
        let values = SVGChart.perMinute([(Date(timeIntervalSince1970: 600), 7), (Date(timeIntervalSince1970: 480), 2),
                                         (Date(timeIntervalSince1970: 0), 99)], minutes: 4, now: now)
        #expect(values == [0, 2, 0, 7])
    }
}

@Suite struct CursorTests {
    @Test func jobCursorsArePositiveIDs() {
        #expect(Cursor.jobs("42") == 42)
        for bad in [nil, "", "0", "-1", "4 2", "1e3", "99999999999999999999", "abc", "１２"] as [String?] {
            #expect(Cursor.jobs(bad) == nil, "\(bad ?? "nil")")
        }
    }

    @Test func deadLetterCursorsRoundTrip() {
        let text = Cursor.format(failedAtMicros: 1_764_000_000_123_456, id: 9)
        #expect(text == "1764000000123456-9")
        let parsed = Cursor.deadLetters(text)
        #expect(parsed?.failedAtMicros == 1_764_000_000_123_456 && parsed?.id == 9)
        for bad in [nil, "", "1-", "-1", "1-0", "a-1", "1-2-3", "1.5-2"] as [String?] {
            #expect(Cursor.deadLetters(bad) == nil, "\(bad ?? "nil")")
        }
    }
}

@Suite struct DashboardHelpersTests {
    @Test func redirectsStayOnThisDashboard() {
        #expect(Dashboard.isLocalPath("/jobs/5"))
        #expect(!Dashboard.isLocalPath("//evil.example/x"))
        #expect(!Dashboard.isLocalPath("https://evil.example"))
        #expect(!Dashboard.isLocalPath("/\\evil.example"))
        #expect(!Dashboard.isLocalPath("/x\r\nSet-Cookie: a=b"))
    }

    @Test func countsSayWhenTheyAreCapped() {
        #expect(Pages.count(.init(value: 100_000, capped: true)) == "more than 100,000")
        #expect(Pages.count(.init(value: 1234, capped: false)) == "1,234")
        #expect(Pages.grouped(0) == "0")
    }

    @Test func theSnapshotIsTakenOncePerLifetimeHoweverManyAsk() throws {
        let overview = DashboardStore.Overview(queues: [], held: .init(value: 0, capped: false), estimatedRows: [:], deadLetters: [:],
                                               perMinute: [], attemptsByClass: [:], openBreakers: [], liveWorkers: 0, takenAt: Date())
        let cache = SnapshotCache(lifetime: .seconds(60)) { overview }
        DispatchQueue.concurrentPerform(iterations: 50) { _ in _ = try? cache.get() }
        #expect(cache.taken == 1)
    }

    @Test func formsQueriesAndCookiesDecode() {
        let pairs = HTTPForm.decode("a=1&b=x+y&c=%3Cscript%3E&d&e=%zz")
        #expect(pairs.map(\.name) == ["a", "b", "c", "d", "e"])
        #expect(pairs.map(\.value) == ["1", "x y", "<script>", "", "%zz"])
        #expect(HTTPForm.percentEncode("a b/<>") == "a%20b%2F%3C%3E")
        #expect(HTTPForm.cookies("x=1; courier_session=abc").last?.value == "abc")
    }
}
