@testable import CourierDashboard
import CourierHTTPServer
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// A dashboard served in-process on a loopback port, over its own test database.
final class DashboardHarness: @unchecked Sendable {
    let database: TestDatabase
    let db: PostgresConnection
    let dashboard: Dashboard
    let server: HTTPServer
    let client: DashboardClient
    private let lock = NSLock()
    private var lines: [String] = []

    init(token: String? = nil, readOnly: Bool = false, allowedHosts: [String] = [],
         throttle: LoginThrottle.Policy = .init(), label: String = #function) throws {
        database = try CourierTestDatabase.create(label: label)
        db = try database.connect()
        var configuration = Dashboard.Configuration(listen: HTTPServerAddress(host: "127.0.0.1", port: 0))
        configuration.token = token
        configuration.readOnly = readOnly
        configuration.allowedHosts = allowedHosts
        configuration.loginThrottle = throttle
        configuration.snapshotLifetime = .milliseconds(100)
        let store = DashboardStore(.init(database: database.configuration(applicationName: "dashboard test")))
        let box = LogBox()
        dashboard = Dashboard(configuration: configuration, store: store, log: { box.append($0) })
        logBox = box
        server = dashboard.server()
        try server.start()
        client = DashboardClient(port: server.port)
    }

    private let logBox: LogBox
    var log: [String] { logBox.lines }

    func close() {
        server.stop()
        db.close()
        try? database.drop()
    }

    /// Enqueues a waiting job (due in an hour, so no worker would take it) and returns its id.
    func enqueue(url: String = "http://example.com/hook", body: String? = nil, headers: [String: String] = [:]) throws -> Int64 {
        try TestRows(db).job(url: url) { request in
            request.body = body
            request.headers = headers.map { (name: $0.key, value: .literal($0.value)) }
            request.runAt = Date().addingTimeInterval(3600)
        }
    }

    func waiting(_ id: Int64) throws -> Bool {
        try db.query("select exists (select 1 from courier.jobs where id = \(id))").rows[0].decode(0, as: Bool.self)
    }
}

final class LogBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.withLock { stored.append(line) } }
    var lines: [String] { lock.withLock { stored } }
}

@Suite("dashboard over HTTP", .serialized)
struct DashboardHTTPTests {
    static let token = "test-token-0123456789abcdef"

    @Test func everyRequestNeedsTheTokenWhenOneIsSet() throws {
        let h = try DashboardHarness(token: Self.token)
        defer { h.close() }
        #expect(try h.client.get("/api/stats").status == 401)
        let page = try h.client.get("/jobs")
        #expect(page.status == 303 && page.header("Location") == "/login")
        #expect(try h.client.get("/api/stats", headers: [("Authorization", "Bearer wrong-token-0123456789")]).status == 401)
        #expect(try h.client.get("/api/stats", headers: [("Authorization", "Bearer \(Self.token)")]).status == 200)
        // The login form: a wrong token is refused, the right one sets an HttpOnly, SameSite cookie.
        #expect(try h.client.post("/login", form: [("token", "nope")]).status == 401)
        let login = try h.client.post("/login", form: [("token", Self.token)])
        #expect(login.status == 303)
        let cookie = try #require(login.header("Set-Cookie"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let session = String(cookie.prefix { $0 != ";" })
        let overview = try h.client.get("/", headers: [("Cookie", session)])
        #expect(overview.status == 200 && overview.body.contains("Depth per queue"))
        #expect(try h.client.get("/", headers: [("Cookie", "courier_session=forged")]).status == 303)
    }

    @Test func crossSitePostsAndMissingCSRFTokensAreRefusedAndChangeNothing() throws {
        let h = try DashboardHarness(token: Self.token)
        defer { h.close() }
        let id = try h.enqueue()
        let login = try h.client.post("/login", form: [("token", Self.token)])
        let session = String(try #require(login.header("Set-Cookie")).prefix { $0 != ";" })
        let page = try h.client.get("/jobs/\(id)", headers: [("Cookie", session)])
        let csrf = try #require(DashboardClient.csrf(in: page.body))
        #expect(csrf.count == 64)
        #expect(page.body.contains("<td id=\"job-fairness-key\">(default)</td>"), "the job page names the fairness key")

        let noToken = try h.client.post("/api/jobs/\(id)/cancel", headers: [("Cookie", session)])
        #expect(noToken.status == 403)
        let wrongToken = try h.client.post("/api/jobs/\(id)/cancel", form: [("csrf", String(repeating: "0", count: 64))], headers: [("Cookie", session)])
        #expect(wrongToken.status == 403)
        let crossSite = try h.client.post("/api/jobs/\(id)/cancel", form: [("csrf", csrf)],
                                          headers: [("Cookie", session), ("Origin", "http://evil.example")])
        #expect(crossSite.status == 403)
        let fetchSite = try h.client.post("/api/jobs/\(id)/cancel", form: [("csrf", csrf)],
                                          headers: [("Cookie", session), ("Sec-Fetch-Site", "cross-site")])
        #expect(fetchSite.status == 403)
        let bearerCrossSite = try h.client.post("/api/jobs/\(id)/cancel",
                                                headers: [("Authorization", "Bearer \(Self.token)"), ("Origin", "http://evil.example")])
        #expect(bearerCrossSite.status == 403)
        #expect(try h.waiting(id), "no refused POST changed anything")

        let allowed = try h.client.post("/api/jobs/\(id)/cancel", form: [("csrf", csrf), ("return_to", "/jobs/\(id)")],
                                        headers: [("Cookie", session), ("Origin", "http://\(h.client.host)")])
        #expect(allowed.status == 303)
        #expect(allowed.header("Location")?.hasPrefix("/jobs/\(id)?notice=") == true)
        #expect(!(try h.waiting(id)))
        #expect(h.log.contains { $0.contains("session ") && $0.contains("cancel job \(id)") }, "the action is logged with who: \(h.log)")

        // A script with the bearer token needs no CSRF token (a browser never adds the header itself).
        let other = try h.enqueue()
        let api = try h.client.post("/api/jobs/\(other)/cancel", headers: [("Authorization", "Bearer \(Self.token)")])
        #expect(api.status == 200 && api.body.contains("\"outcome\":\"cancelled\""))
        #expect(h.log.contains { $0.contains("token cancel job \(other)") })
    }

    @Test func aReadOnlyDashboardRefusesEveryAction() throws {
        let h = try DashboardHarness(token: Self.token, readOnly: true)
        defer { h.close() }
        let id = try h.enqueue()
        let bearer = ("Authorization", "Bearer \(Self.token)")
        for path in ["/api/jobs/\(id)/cancel", "/api/jobs/\(id)/retry", "/api/dead/replay", "/api/dead/purge", "/api/breakers/open",
                     "/api/queues/pause", "/api/destinations/pause"] {
            let answer = try h.client.post(path, form: [("destination", "http://example.com:80"), ("older_than", "1s"), ("queue", "default")],
                                           headers: [bearer])
            #expect(answer.status == 403, "\(path)")
        }
        #expect(try h.waiting(id))
        #expect(try QueueSettingsTable.paused(on: h.db).isEmpty)
        #expect(try DestinationsTable.paused(on: h.db).isEmpty)
        let page = try h.client.get("/jobs/\(id)", headers: [bearer])
        #expect(page.status == 200 && page.body.contains("read-only"))
    }

    @Test func withoutATokenOnlyLocalHostNamesAreServed() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        #expect(try h.client.get("/api/stats").status == 200)
        #expect(try h.client.get("/api/stats", headers: []).status == 200)
        var rebinding = h.client
        rebinding.host = "attacker.example:\(h.server.port)"
        #expect(try rebinding.get("/api/stats").status == 403, "a DNS-rebinding Host is refused")
        var localhost = h.client
        localhost.host = "localhost:\(h.server.port)"
        #expect(try localhost.get("/").status == 200)
    }

    /// Issue 43: with a token the Host was not checked, so a DNS-rebinding page could
    /// try tokens from the operator's browser. Now a foreign Host is refused before any
    /// token is looked at, in every mode; --allowed-host names a real one.
    @Test func aRebindingHostIsRefusedWithATokenTooAndAllowedHostsAreServed() throws {
        let h = try DashboardHarness(token: Self.token, allowedHosts: ["dash.example.com"])
        defer { h.close() }
        var rebinding = h.client
        rebinding.host = "rebind.attacker.example:\(h.server.port)"
        let origin = ("Origin", "http://rebind.attacker.example:\(h.server.port)")
        let login = try rebinding.post("/login", form: [("token", Self.token)], headers: [origin])
        #expect(login.status == 403 && login.header("Set-Cookie") == nil, "the rebinding page cannot log in: \(login.status) \(login.body)")
        #expect(try rebinding.get("/api/stats", headers: [("Authorization", "Bearer \(Self.token)")]).status == 403)
        #expect(try rebinding.get("/login").status == 403)
        var named = h.client
        named.host = "dash.example.com:\(h.server.port)"
        #expect(try named.get("/api/stats", headers: [("Authorization", "Bearer \(Self.token)")]).status == 200)
        var localhost = h.client
        localhost.host = "localhost:\(h.server.port)"
        #expect(try localhost.get("/login").status == 200)
    }

    /// Issue 43: logins were neither throttled nor logged (about 2,600 guesses a
    /// second). Now each failed try is logged without the guess, and past the client's
    /// burst a try gets 429 with Retry-After without being checked, even the right token.
    @Test func guessingTheTokenIsThrottledAndLogged() throws {
        var throttle = LoginThrottle.Policy()
        throttle.clientBurst = 3
        throttle.clientRefill = .seconds(3600)
        let h = try DashboardHarness(token: Self.token, throttle: throttle)
        defer { h.close() }
        let guesses = ["guess-0001-aaaaaaaaaaaa", "guess-0002-bbbbbbbbbbbb"]
        for guess in guesses {
            #expect(try h.client.post("/login", form: [("token", guess)]).status == 401)
        }
        #expect(try h.client.get("/api/stats", headers: [("Authorization", "Bearer guess-0003-cccccccccccc")]).status == 401)
        let login = try h.client.post("/login", form: [("token", Self.token)])
        #expect(login.status == 429 && login.header("Set-Cookie") == nil, "throttled, the right token is not even checked: \(login.status)")
        let retryAfter = try #require(login.header("Retry-After").flatMap(Int.init))
        #expect(retryAfter > 3500 && retryAfter <= 3600)
        let api = try h.client.get("/api/stats", headers: [("Authorization", "Bearer \(Self.token)")])
        #expect(api.status == 429 && api.header("Retry-After") != nil && api.body.contains("too many failed attempts"))
        let failures = h.log.filter { $0.contains("failed login from 127.0.0.1") }
        #expect(failures.count == 3, "each failed try is logged with its address: \(h.log)")
        #expect(h.log.filter { $0.contains("throttling token attempts from 127.0.0.1") }.count == 1, "once a minute: \(h.log)")
        #expect(!h.log.contains { $0.contains("guess-") || $0.contains(Self.token) }, "no guess and no token is logged: \(h.log)")
    }

    @Test func everyValueIsEscapedAndSecretsAreRedacted() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        let hostile = "<img src=x onerror=alert(1)>"
        let id = try h.enqueue(url: "http://example.com/a?q=<script>alert(1)</script>", body: hostile,
                               headers: ["Authorization": "Bearer s3cr3t-value", "X-Note": "<script>x</script>"])
        let job = try h.client.get("/jobs/\(id)")
        #expect(job.status == 200)
        #expect(!job.body.contains("<script>alert") && job.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!job.body.contains("<script>x</script>") && job.body.contains("&lt;script&gt;x&lt;/script&gt;"))
        #expect(!job.body.contains("s3cr3t-value") && job.body.contains("[REDACTED]"))
        #expect(!(try h.client.get("/api/jobs/\(id)").body.contains("s3cr3t-value")))
        _ = try h.client.post("/api/jobs/\(id)/cancel", form: [("csrf", try #require(DashboardClient.csrf(in: job.body)))])
        let letterID = try h.db.query("select id from courier.dead_letters where job_id = \(id)").rows[0].decode(0, as: Int64.self)
        let letter = try h.client.get("/dead/\(letterID)")
        #expect(letter.status == 200)
        #expect(!letter.body.contains(hostile) && letter.body.contains("&lt;img src=x onerror=alert(1)&gt;"))
        // Error messages echo user input escaped too.
        let bad = try h.client.get("/dead?reason=%3Cscript%3E")
        #expect(bad.status == 400 && !bad.body.contains("<script>") && bad.body.contains("&lt;script&gt;"))
    }

    /// Issue 43 item 2: a job that workers keep handing back says why it waits, on its
    /// page and in its JSON, escaped like every other value.
    @Test func aRefusedJobSaysWhyItWaits() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        let id = try h.enqueue(url: "http://example.com/a", body: nil, headers: [:])
        try h.db.query("""
            update courier.jobs set refusals = 3, refused_since = now() - interval '5 minutes', refused_attempt = 0,
                                    refusal = 'no secret <b>NOPE</b>' where id = \(id)
            """)
        let page = try h.client.get("/jobs/\(id)")
        #expect(page.status == 200)
        #expect(page.body.contains("Waits because") && page.body.contains("3 refusals"), "\(page.body)")
        #expect(page.body.contains("no secret &lt;b&gt;NOPE&lt;/b&gt;") && !page.body.contains("<b>NOPE"))
        let api = try h.client.get("/api/jobs/\(id)")
        #expect(api.body.contains("\"refusal\"") && api.body.contains("\"count\":3"), "\(api.body)")
    }

    @Test func everyAnswerCarriesAStrictContentSecurityPolicy() throws {
        let h = try DashboardHarness(token: Self.token)
        defer { h.close() }
        let bearer = ("Authorization", "Bearer \(Self.token)")
        let answers = [try h.client.get("/login"), try h.client.get("/", headers: [bearer]), try h.client.get("/api/stats", headers: [bearer]),
                       try h.client.get("/nope", headers: [bearer]), try h.client.get("/api/stats"), try h.client.get("/assets/app.js")]
        for answer in answers {
            let csp = try #require(answer.header("Content-Security-Policy"))
            #expect(csp.contains("default-src 'none'") && csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"))
            #expect(csp.contains("frame-ancestors 'none'"))
            #expect(answer.header("X-Content-Type-Options") == "nosniff")
        }
        let page = try h.client.get("/", headers: [bearer]).body
        #expect(!page.contains("<script>") && page.contains("<script src=\"/assets/app.js\""), "no inline script")
        #expect(!page.contains(" style="), "no inline styles")
    }

    @Test func everyPageAndAPIAnswers() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        let id = try h.enqueue()
        for path in ["/", "/queues", "/jobs", "/jobs?state=available&queue=default", "/jobs/\(id)", "/dead", "/breakers",
                     "/destinations", "/workers", "/schedules", "/api/stats", "/api/jobs", "/api/jobs/\(id)", "/api/dead",
                     "/api/breakers", "/api/workers", "/api/queues", "/api/destinations"] {
            #expect(try h.client.get(path).status == 200, "\(path)")
        }
        #expect(try h.client.get("/jobs/999999").status == 404)
        #expect(try h.client.get("/api/jobs/999999").status == 404)
        #expect(try h.client.get("/jobs?state=bogus").status == 400)
        #expect(try h.client.get("/jobs?q=\(id)").header("Location") == "/jobs/\(id)", "searching an id opens the job")
    }

    @Test func replayOfAFilteredSetPreviewsFirstThenReplaysWithARate() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        var ids: [Int64] = []
        for index in 0..<3 { ids.append(try h.enqueue(url: "http://a.example/\(index)")) }
        ids.append(try h.enqueue(url: "http://b.example/0"))
        _ = try JobsTable.cancel(ids: ids, on: h.db)
        let csrf = try #require(DashboardClient.csrf(in: try h.client.get("/dead").body))
        let preview = try h.client.get("/dead/replay?destination=http%3A%2F%2Fa.example%3A80&rate=10%2Fs")
        #expect(preview.status == 200 && preview.body.contains("3 dead letters would be replayed"))
        #expect(try h.db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0, "a preview changes nothing")
        let dry = try h.client.post("/api/dead/replay", form: [("csrf", csrf), ("destination", "http://a.example:80"), ("dry_run", "1")])
        #expect(dry.status == 200 && dry.body.contains("\"total\":3"))
        let replay = try h.client.post("/api/dead/replay", form: [("csrf", csrf), ("destination", "http://a.example:80"), ("rate", "10/s")])
        #expect(replay.status == 200 && replay.body.contains("\"replayed\":3"))
        let spread = try h.db.query("""
            select count(*)::bigint, extract(epoch from max(run_at) - min(run_at))::float8 from courier.jobs where destination = 'http://a.example:80'
            """).rows[0]
        #expect(try spread.decode(0, as: Int.self) == 3)
        #expect(abs(try spread.decode(1, as: Double.self) - 0.2) < 0.01, "paced at 10/s")
        #expect(h.log.contains { $0.contains("replayed 3 dead letters at 10.0/s") })
        // Purge the selected row that is left.
        let left = try h.db.query("select id from courier.dead_letters where replayed_at is null").rows.map { try $0.decode(0, as: Int64.self) }
        #expect(left.count == 1)
        let purge = try h.client.post("/api/dead/purge", form: [("csrf", csrf), ("ids", String(left[0]))])
        #expect(purge.status == 200 && purge.body.contains("\"purged\":1"))
    }

    @Test func deadLettersAndJobsPageByKeyset() throws {
        let h = try DashboardHarness()
        defer { h.close() }
        try TestRows(h.db).bulkJobs(130, url: "http://k.example", numbered: true) { $0.runAt = Date().addingTimeInterval(3600) }
        let ids = try h.db.query("select id from courier.jobs order by id").rows.map { try $0.decode(0, as: Int64.self) }
        _ = try JobsTable.cancel(ids: Array(ids.prefix(70)), on: h.db)
        var seen: [Int64] = []
        var cursor: String? = nil
        repeat {
            let answer = try h.client.get("/api/dead" + (cursor.map { "?after=\($0)" } ?? ""))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            let letters = try #require(object["dead_letters"] as? [[String: Any]])
            seen += letters.compactMap { ($0["job_id"] as? NSNumber)?.int64Value }
            cursor = object["next"] as? String
        } while cursor != nil
        #expect(seen.count == 70 && Set(seen) == Set(ids.prefix(70)), "every dead letter once")
        let first = try h.client.get("/api/jobs")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(first.body.utf8)) as? [String: Any])
        #expect((object["jobs"] as? [Any])?.count == 50)
        let next = try #require(object["next"] as? String)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(try h.client.get("/api/jobs?after=\(next)").body.utf8)) as? [String: Any])
        #expect((second["jobs"] as? [Any])?.count == 10)
        #expect(second["next"] == nil || second["next"] is NSNull)
    }

    @Test func queuesAndDestinationsArePausedAndResumedFromTheirPages() throws {
        let h = try DashboardHarness(token: Self.token)
        defer { h.close() }
        let bearer = ("Authorization", "Bearer \(Self.token)")
        _ = try h.enqueue(url: "http://limited.example.com/hook")
        _ = try DestinationsTable.merge(.init(destination: "http://limited.example.com:80", maxInFlight: 4, ratePerSecond: 20, burst: 2), on: h.db)

        // The pages offer the action and show the policy.
        let destinations = try h.client.get("/destinations", headers: [bearer])
        #expect(destinations.status == 200)
        #expect(destinations.body.contains("at most 4 in flight") && destinations.body.contains("20/s (burst 2)"), "\(destinations.body)")
        #expect(destinations.body.contains("action=\"/api/destinations/pause\""))
        #expect(try h.client.get("/queues", headers: [bearer]).body.contains("action=\"/api/queues/pause\""))

        // Pause: the database says so, the pages show it and offer Resume; each action is logged.
        let pauseQueue = try h.client.post("/api/queues/pause", form: [("queue", "default")], headers: [bearer])
        #expect(pauseQueue.status == 200, "\(pauseQueue.body)")
        #expect(try QueueSettingsTable.paused(on: h.db) == ["default"])
        let pauseDestination = try h.client.post("/api/destinations/pause", form: [("destination", "http://limited.example.com:80")], headers: [bearer])
        #expect(pauseDestination.status == 200, "\(pauseDestination.body)")
        #expect(try DestinationsTable.paused(on: h.db) == ["http://limited.example.com:80"])
        #expect(try h.client.get("/queues", headers: [bearer]).body.contains("action=\"/api/queues/resume\""))
        let paused = try h.client.get("/destinations", headers: [bearer]).body
        #expect(paused.contains("action=\"/api/destinations/resume\"") && paused.contains("<td>paused</td>"))
        #expect(h.log.contains { $0.contains("token paused queue default") })
        #expect(h.log.contains { $0.contains("token paused destination http://limited.example.com:80") })

        // Resume undoes both; the cap stays.
        #expect(try h.client.post("/api/queues/resume", form: [("queue", "default")], headers: [bearer]).status == 200)
        #expect(try h.client.post("/api/destinations/resume", form: [("destination", "http://limited.example.com:80")], headers: [bearer]).status == 200)
        #expect(try QueueSettingsTable.paused(on: h.db).isEmpty)
        #expect(try DestinationsTable.paused(on: h.db).isEmpty)
        #expect(try DestinationsTable.all(on: h.db).first?.maxInFlight == 4)

        // Bad input names the field and changes nothing.
        let badQueue = try h.client.post("/api/queues/pause", form: [("queue", "no spaces allowed")], headers: [bearer])
        #expect(badQueue.status == 400 && badQueue.body.contains("queue"), "\(badQueue.body)")
        let missing = try h.client.post("/api/destinations/pause", headers: [bearer])
        #expect(missing.status == 400 && missing.body.contains("destination"), "\(missing.body)")
        #expect(try QueueSettingsTable.paused(on: h.db).isEmpty)
    }
}
