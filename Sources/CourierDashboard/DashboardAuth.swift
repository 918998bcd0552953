import CourierHTTPServer
import Foundation

/// Who may use the dashboard and whether a POST is genuinely the dashboard's own.
///
/// - With a token, every request (but the login form and the static assets) must carry
///   it as `Authorization: Bearer TOKEN`, or the session cookie the login form sets
///   (HttpOnly, SameSite=Strict). Without one, the dashboard is for whoever reaches its
///   (loopback by default) address, and refuses requests whose `Host` is not an address
///   of this machine, so a web page cannot read it through DNS rebinding.
/// - A POST must come from the dashboard's own origin (`Origin`, else `Sec-Fetch-Site`)
///   and, unless it carries the bearer token (which a browser never adds by itself), the
///   session's CSRF token (form field `csrf` or header `X-CSRF-Token`).
public final class DashboardAuth: @unchecked Sendable {
    /// Who made a request, as the action log names them.
    public struct Identity: Sendable, Equatable {
        public enum Kind: Sendable, Equatable { case bearer, session, local }
        public var kind: Kind
        /// The CSRF token forms must carry (empty for bearer requests, which need none).
        public var csrf: String
        /// `token`, `session 1a2b3c4d` or `local`.
        public var label: String
    }

    public static let cookieName = "courier_session"
    /// How long a login lasts (default 12 hours): after it the cookie is refused and the
    /// browser is sent to the login form again.
    public static let defaultSessionLifetime: Duration = .seconds(12 * 3600)
    /// Sessions kept at most (default 1,000); a login beyond it ends the oldest, so
    /// repeated logins cannot grow the process without bound.
    public static let defaultMaximumSessions = 1_000

    private struct Session {
        var csrf: String
        var expires: ContinuousClock.Instant
    }

    private let token: String?
    private let localCSRF: String
    private let sessionLifetime: Duration
    private let maximumSessions: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let lock = NSLock()
    /// Session id → its CSRF token and end.
    private var sessions: [String: Session] = [:]

    /// - Parameter now: the clock sessions expire by (injected for tests).
    public init(token: String?, sessionLifetime: Duration = defaultSessionLifetime,
                maximumSessions: Int = defaultMaximumSessions,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
        self.localCSRF = Self.randomToken()
        self.sessionLifetime = sessionLifetime
        self.maximumSessions = max(1, maximumSessions)
        self.now = now
    }

    public var requiresToken: Bool { token != nil }

    /// The identity of `request`, or nil when it must log in (or is refused).
    public func identify(_ request: HTTPServer.Request) -> Identity? {
        guard let token else { return Identity(kind: .local, csrf: localCSRF, label: "local") }
        if let authorization = request.header("authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer", Self.constantTimeEqual(String(parts[1]), token) {
                return Identity(kind: .bearer, csrf: "", label: "token")
            }
            return nil
        }
        if let session = request.cookie(Self.cookieName), let csrf = liveSession(session) {
            return Identity(kind: .session, csrf: csrf, label: "session " + String(session.prefix(8)))
        }
        return nil
    }

    /// The CSRF token of `session` while it lasts; an expired one is forgotten.
    private func liveSession(_ session: String) -> String? {
        let now = now()
        return lock.withLock {
            guard let found = sessions[session] else { return nil }
            guard found.expires > now else {
                sessions[session] = nil
                return nil
            }
            return found.csrf
        }
    }

    /// Starts a session when `candidate` is the token; returns the cookie value.
    public func login(candidate: String) -> String? {
        guard let token, Self.constantTimeEqual(candidate, token) else { return nil }
        let session = Self.randomToken()
        let now = now()
        let lifetime = sessionLifetime
        let maximum = maximumSessions
        lock.withLock {
            sessions = sessions.filter { $0.value.expires > now }
            if sessions.count >= maximum, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                sessions[oldest.key] = nil
            }
            sessions[session] = Session(csrf: Self.randomToken(), expires: now + lifetime)
        }
        return session
    }

    public func logout(_ request: HTTPServer.Request) {
        guard let session = request.cookie(Self.cookieName) else { return }
        _ = lock.withLock { sessions.removeValue(forKey: session) }
    }

    /// The `Set-Cookie` value for a session (nil value: clears it); the browser drops it
    /// when the session ends.
    public func cookie(_ session: String?) -> String {
        guard let session else { return "\(Self.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" }
        return "\(Self.cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(sessionLifetime.components.seconds)"
    }

    /// Whether `host` (the `Host` header) names this machine: loopback names and
    /// addresses, or `listenHost` itself. Pure.
    public static func isLocalHost(_ host: String?, listenHost: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        var name = host.lowercased()
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<close])
        } else if let colon = name.lastIndex(of: ":"), !name[..<colon].contains(":") {
            name = String(name[..<colon])
        }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        let loopbackV4 = parts.count == 4 && parts[0] == "127" && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) }
        if name == "localhost" || name == "::1" || loopbackV4 { return true }
        if let listenHost, !listenHost.isEmpty, listenHost != "0.0.0.0", listenHost != "::" { return name == listenHost.lowercased() }
        return false
    }

    /// Why a POST must be refused (403), or nil when it may proceed. Pure.
    /// - Parameters:
    ///   - origin, fetchSite, host: the request's `Origin`, `Sec-Fetch-Site` and `Host`.
    ///   - sentCSRF: the `csrf` form field or `X-CSRF-Token` header.
    public static func postRefusal(identity: Identity, origin: String?, fetchSite: String?, host: String?,
                                   sentCSRF: String?) -> String? {
        if let origin {
            guard let host, origin.lowercased() == "http://" + host.lowercased() || origin.lowercased() == "https://" + host.lowercased() else {
                return "cross-site request refused: Origin \(origin) is not this dashboard"
            }
        } else if let fetchSite, fetchSite != "same-origin", fetchSite != "none" {
            return "cross-site request refused: Sec-Fetch-Site is \(fetchSite)"
        }
        if identity.kind == .bearer { return nil }
        guard let sentCSRF, !identity.csrf.isEmpty, constantTimeEqual(sentCSRF, identity.csrf) else {
            return "missing or wrong CSRF token: reload the page and try again"
        }
        return nil
    }

    /// Compares without stopping at the first difference (the time says nothing about the token).
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }

    /// 32 random bytes as hex, from the system's secure generator.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
