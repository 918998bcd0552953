import CourierCLI
import CourierCore
import CourierHTTPServer
import CourierStore
import Foundation

/// The web dashboard (`jobctl dashboard`): server-rendered pages, a JSON API under
/// `/api/`, and the static assets, all answered by ``handle(_:)`` on the
/// CourierHTTPServer's handler threads. Pages and API read through ``DashboardStore``;
/// actions are POSTs that pass ``DashboardAuth`` and are logged with who and what.
public final class Dashboard: Sendable {
    public struct Configuration: Sendable {
        public var listen: HTTPServerAddress
        public var readOnly = false
        /// The token every request needs, as ``DashboardAuth/validatedToken(_:source:)``
        /// returned it; nil: none (keep the listen address on loopback then).
        public var token: String?
        /// Names besides loopback (and the listen address) that a request's `Host` may
        /// give (`--allowed-host`), as ``AllowedHosts/validated(_:field:)`` returned them.
        public var allowedHosts: [String] = []
        /// How many failed token checks are allowed, per client address and overall.
        public var loginThrottle = LoginThrottle.Policy()
        /// How long the overview snapshot is reused, whatever the number of browsers. Default 1 s.
        public var snapshotLifetime: Duration = .seconds(1)
        /// How many dead letters one replay (and its preview) from the dashboard takes at most:
        /// the preview counts them, and counting 50,000 took 300 ms at 1M dead letters. Default 10,000.
        public var replayCap = 10_000

        public init(listen: HTTPServerAddress) {
            self.listen = listen
        }
    }

    public static let defaultListen = HTTPServerAddress(host: "127.0.0.1", port: 8377)

    let configuration: Configuration
    let store: DashboardStore
    let auth: DashboardAuth
    let hosts: AllowedHosts
    let snapshot: SnapshotCache
    /// Where each action, failed login and throttled client is logged (one line each).
    let log: @Sendable (String) -> Void
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Lets one line per client address a minute through about its throttled attempts.
    private let throttledLog = Locked(LogThrottle(interval: .seconds(60)))

    /// - Parameter now: the clock sessions and the login throttle go by (injected for tests).
    public init(configuration: Configuration, store: DashboardStore, log: @escaping @Sendable (String) -> Void,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.configuration = configuration
        self.store = store
        self.auth = DashboardAuth(token: configuration.token, throttle: configuration.loginThrottle, now: now)
        self.hosts = AllowedHosts(listenHost: configuration.listen.host, extra: configuration.allowedHosts)
        self.snapshot = SnapshotCache(lifetime: configuration.snapshotLifetime) { try store.overview() }
        self.log = log
        self.now = now
    }

    /// The server: every path goes to ``handle(_:)`` on a handler thread; bodies up to 64 KiB.
    public func server() -> HTTPServer {
        var limits = HTTPServer.Limits()
        limits.maxBodyBytes = 64 * 1024
        limits.maxHeaderBytes = 16 * 1024
        let router = HTTPRouter([
            HTTPRoute(.prefix("/"), methods: ["GET", "POST"], blocking: true) { [self] in handle($0) },
        ])
        return HTTPServer(address: configuration.listen, limits: limits, router: router)
    }

    /// The headers every answer carries: a strict CSP (scripts and styles only from
    /// /assets/), no framing, no sniffing, no referrer.
    static let securityHeaders: [HTTPServer.Response.Header] = [
        .init("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        .init("X-Content-Type-Options", "nosniff"),
        .init("X-Frame-Options", "DENY"),
        // Not no-referrer: with it, browsers send `Origin: null` on the dashboard's own form POSTs.
        .init("Referrer-Policy", "same-origin"),
    ]

    /// Answers one request (the whole dashboard).
    public func handle(_ request: HTTPServer.Request) -> HTTPServer.Response {
        var response = route(request)
        response.headers += Self.securityHeaders
        return response
    }

    private func route(_ request: HTTPServer.Request) -> HTTPServer.Response {
        let path = request.path
        guard hosts.allows(request.header("host")) else {
            return Self.text(403, "refused: the Host header is not a name of this dashboard "
                             + "(loopback names are; start it with --allowed-host NAME to serve another)")
        }
        if path == "/assets/app.css" { return .init(status: 200, contentType: "text/css; charset=utf-8", body: Array(Assets.css.utf8)) }
        if path == "/assets/app.js" { return .init(status: 200, contentType: "text/javascript; charset=utf-8", body: Array(Assets.js.utf8)) }
        if path == "/login" { return login(request) }
        let identity: DashboardAuth.Identity
        switch auth.authenticate(request) {
        case .identified(let found):
            identity = found
        case .throttled(let wait):
            return throttled(request, wait)
        case .wrongToken:
            log("dashboard: failed login from \(client(request)): wrong bearer token (\(request.method) \(path))")
            return Self.json(401, ["error": "wrong token"], headers: [.init("WWW-Authenticate", "Bearer")])
        case .anonymous:
            if path.hasPrefix("/api/") || request.method == "POST" {
                return Self.json(401, ["error": "a token is needed: Authorization: Bearer TOKEN"],
                                 headers: [.init("WWW-Authenticate", "Bearer")])
            }
            return Self.redirect("/login")
        }
        if request.method == "POST" {
            if path == "/logout" {
                auth.logout(request)
                return Self.redirect("/login", headers: [.init("Set-Cookie", auth.cookie(nil))])
            }
            if let refusal = DashboardAuth.postRefusal(identity: identity, origin: request.header("origin"),
                                                       fetchSite: request.header("sec-fetch-site"), host: request.header("host"),
                                                       sentCSRF: Params(request).first("csrf") ?? request.header("x-csrf-token")) {
                log("dashboard: refused \(request.path) by \(identity.label): \(refusal)")
                return Self.error(request, 403, refusal)
            }
            if configuration.readOnly {
                return Self.error(request, 403, "this dashboard is read-only (--read-only): no action is taken")
            }
            return act(request, identity: identity)
        }
        do {
            if path.hasPrefix("/api/") { return try api(request) }
            return try page(request, identity: identity)
        } catch let error as BadRequest {
            return Self.error(request, 400, error.message)
        } catch {
            let failure = StoreError.from(error)
            return Self.error(request, failure.code == .connectionLost ? 503 : 500, "database: \(failure.message)")
        }
    }

    private func login(_ request: HTTPServer.Request) -> HTTPServer.Response {
        if !auth.requiresToken { return Self.redirect("/") }
        if request.method == "POST" {
            // The login form is a POST too: from this origin only.
            if let origin = request.header("origin"), let host = request.header("host"),
               origin.lowercased() != "http://" + host.lowercased() && origin.lowercased() != "https://" + host.lowercased() {
                return Self.text(403, "cross-site login refused")
            }
            switch auth.login(candidate: Params(request).first("token") ?? "", client: request.peer) {
            case .session(let session):
                log("dashboard: login from \(client(request)), session \(session.prefix(8))")
                return Self.redirect("/", headers: [.init("Set-Cookie", auth.cookie(session))])
            case .refused:
                log("dashboard: failed login from \(client(request)): wrong token (login form)")
                return Self.html(401, Pages.login(error: "That token is not right."))
            case .throttled(let wait):
                return throttled(request, wait)
            }
        }
        return Self.html(200, Pages.login(error: nil))
    }

    /// The client address a log line names.
    private func client(_ request: HTTPServer.Request) -> String {
        request.peer ?? DashboardAuth.unknownClient
    }

    /// 429 with Retry-After for an attempt the throttle refused (the token was not
    /// looked at); logged once a minute per client address.
    private func throttled(_ request: HTTPServer.Request, _ wait: Duration) -> HTTPServer.Response {
        let seconds = LoginThrottle.retryAfterSeconds(wait)
        let client = client(request)
        let instant = now()
        if throttledLog.withLock({ $0.allows(client, at: instant) }) {
            log("dashboard: throttling token attempts from \(client): too many failed attempts (next in \(seconds) s)")
        }
        let message = "too many failed attempts: try again in \(seconds) s"
        let headers: [HTTPServer.Response.Header] = [.init("Retry-After", String(seconds))]
        if request.path == "/login" && request.header("authorization") == nil {
            return Self.html(429, Pages.login(error: "Too many failed logins: try again in \(seconds) seconds."), headers: headers)
        }
        return Self.json(429, ["error": message], headers: headers)
    }

    // MARK: - Answers

    struct BadRequest: Error { var message: String }

    static func text(_ status: Int, _ text: String) -> HTTPServer.Response {
        .init(status: status, text: text + "\n")
    }

    static func html(_ status: Int, _ html: HTML, headers: [HTTPServer.Response.Header] = []) -> HTTPServer.Response {
        .init(status: status, contentType: "text/html; charset=utf-8", body: Array(html.text.utf8), headers: headers)
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func json<T: Encodable>(_ status: Int, _ value: T, headers: [HTTPServer.Response.Header] = []) -> HTTPServer.Response {
        let body = (try? encoder.encode(value)).map(Array.init) ?? Array("{}".utf8)
        return .init(status: status, contentType: "application/json", body: body, headers: headers)
    }

    static func redirect(_ location: String, headers: [HTTPServer.Response.Header] = []) -> HTTPServer.Response {
        .init(status: 303, text: "see \(location)\n", headers: [.init("Location", location)] + headers)
    }

    /// An error as JSON for the API, as a page otherwise; the message is escaped.
    static func error(_ request: HTTPServer.Request, _ status: Int, _ message: String) -> HTTPServer.Response {
        if request.path.hasPrefix("/api/") && Params(request).first("return_to") == nil {
            return json(status, ["error": message])
        }
        return html(status, Pages.layout(title: "Error", nav: "", csrf: "", body: "<h1>Error \(status)</h1><p class=\"error\">\(message)</p>"))
    }
}

/// Parameters from the query string, a form body or a JSON object body (arrays give several values).
struct Params {
    private var pairs: [(name: String, value: String)]

    init(_ request: HTTPServer.Request) {
        pairs = request.queryItems + request.formItems
        if request.header("content-type")?.lowercased().hasPrefix("application/json") == true,
           let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] {
            for (name, value) in object {
                let values = (value as? [Any]) ?? [value]
                for item in values {
                    if let text = item as? String { pairs.append((name, text)) }
                    else if let number = item as? NSNumber { pairs.append((name, number.stringValue)) }
                }
            }
        }
    }

    /// The first non-empty value of `name`, trimmed.
    func first(_ name: String) -> String? {
        pairs.first { $0.name == name && !$0.value.trimmingCharacters(in: .whitespaces).isEmpty }?
            .value.trimmingCharacters(in: .whitespaces)
    }

    func all(_ name: String) -> [String] {
        pairs.filter { $0.name == name }.flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            .filter { !$0.isEmpty }
    }

    func ids(_ name: String) throws -> [Int64] {
        try all(name).map { text in
            guard let id = Int64(text), id > 0 else { throw Dashboard.BadRequest(message: "\(name): expected positive ids, got '\(text)'") }
            return id
        }
    }

    func timestamp(_ name: String) throws -> Date? {
        guard let text = first(name) else { return nil }
        do { return try Timestamp.parse(text, field: name, relativeTo: Date()) } catch { throw Dashboard.BadRequest(message: error.description) }
    }
}

/// The overview snapshot, taken at most once per lifetime however many browsers poll.
/// A snapshot older than its lifetime (but younger than ``staleLimit``) is answered at
/// once while one fresh snapshot is taken in the background, so a poll never waits for
/// the database; only the first request after a long idle does.
final class SnapshotCache: @unchecked Sendable {
    private let lifetime: Duration
    /// Past this age a snapshot is not shown: the request waits for a fresh one.
    private let staleLimit: Duration
    private let take: @Sendable () throws -> DashboardStore.Overview
    private let lock = NSLock()
    private let refreshing = NSLock()
    private var latest: (value: DashboardStore.Overview, at: ContinuousClock.Instant, milliseconds: Double)?
    private var backgroundRefresh = false
    /// How many snapshots were taken (for tests).
    private(set) var taken = 0

    init(lifetime: Duration, staleLimit: Duration = .seconds(30), take: @escaping @Sendable () throws -> DashboardStore.Overview) {
        self.lifetime = lifetime
        self.staleLimit = staleLimit
        self.take = take
    }

    /// The snapshot, and how long the database took to answer it (ms).
    func get() throws -> DashboardStore.Overview { try getTimed().value }

    func getTimed() throws -> (value: DashboardStore.Overview, milliseconds: Double) {
        let now = ContinuousClock.now
        if let latest = lock.withLock({ latest }) {
            let age = now - latest.at
            if age < lifetime { return (latest.value, latest.milliseconds) }
            if age < staleLimit {
                refreshInBackground()
                return (latest.value, latest.milliseconds)
            }
        }
        refreshing.lock()
        defer { refreshing.unlock() }
        if let latest = lock.withLock({ latest }), ContinuousClock.now - latest.at < lifetime { return (latest.value, latest.milliseconds) }
        return try refresh()
    }

    private func refresh() throws -> (value: DashboardStore.Overview, milliseconds: Double) {
        let start = ContinuousClock.now
        let value = try take()
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        lock.withLock {
            latest = (value, .now, milliseconds)
            taken += 1
        }
        return (value, milliseconds)
    }

    private func refreshInBackground() {
        let start = lock.withLock { () -> Bool in
            if backgroundRefresh { return false }
            backgroundRefresh = true
            return true
        }
        guard start else { return }
        DispatchQueue.global().async { [self] in
            refreshing.lock()
            if let latest = lock.withLock({ latest }), ContinuousClock.now - latest.at >= lifetime { _ = try? refresh() }
            refreshing.unlock()
            lock.withLock { backgroundRefresh = false }
        }
    }
}
