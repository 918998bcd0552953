import CourierCore
import CourierHTTPServer
import Foundation

/// Who may use the dashboard and whether a POST is genuinely the dashboard's own.
///
/// - With a token, every request (but the login form and the static assets) must carry
///   it as `Authorization: Bearer TOKEN`, or the session cookie the login form sets
///   (HttpOnly, SameSite=Strict). Each presented token is checked through a
///   ``LoginThrottle``: failed guesses are limited per client address and overall.
///   Without a token, the dashboard is for whoever reaches its loopback address.
///   Either way ``AllowedHosts`` refuses requests whose `Host` is not a name of this
///   dashboard, so a web page cannot use it through DNS rebinding.
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

    /// What ``authenticate(_:)`` found.
    public enum Authentication: Sendable, Equatable {
        /// Who made the request.
        case identified(Identity)
        /// No credential, or a session that ended or never was: the browser should log in.
        case anonymous
        /// A bearer token that is not the token: a failed attempt, counted by the throttle.
        case wrongToken
        /// Too many failed attempts: refused without the token being looked at.
        case throttled(retryAfter: Duration)
    }

    /// What ``login(candidate:client:)`` did.
    public enum LoginResult: Sendable, Equatable {
        /// The token was right: the new session's id (the cookie value).
        case session(String)
        /// The token was wrong (or none is set): a failed attempt.
        case refused
        /// Too many failed attempts: refused without the candidate being looked at.
        case throttled(retryAfter: Duration)

        /// The session id when the login succeeded.
        public var session: String? {
            if case .session(let id) = self { return id }
            return nil
        }
    }

    /// The fewest characters a token may have, whatever its source (`--token-file`,
    /// `COURIER_DASHBOARD_TOKEN`): 16. Checked by ``validatedToken(_:source:)``.
    public static let minimumTokenLength = 16

    /// The client address a request without a known peer is counted under.
    static let unknownClient = "unknown"

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
    private let throttle: LoginThrottle
    private let lock = NSLock()
    /// Session id → its CSRF token and end.
    private var sessions: [String: Session] = [:]

    /// - Parameters:
    ///   - token: the token every request needs (as ``validatedToken(_:source:)``
    ///     returned it); nil or empty: none.
    ///   - throttle: how many failed token checks are allowed, per client and overall.
    ///   - now: the clock sessions expire and failed attempts come back by (injected for tests).
    public init(token: String?, sessionLifetime: Duration = defaultSessionLifetime,
                maximumSessions: Int = defaultMaximumSessions, throttle: LoginThrottle.Policy = .init(),
                now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
        self.localCSRF = Self.randomToken()
        self.sessionLifetime = sessionLifetime
        self.maximumSessions = max(1, maximumSessions)
        self.now = now
        self.throttle = LoginThrottle(policy: throttle, now: now)
    }

    public var requiresToken: Bool { token != nil }

    /// The token as given by `source` (the flag or variable it came from), trimmed of
    /// surrounding white space; throws, naming `source`, when it is shorter than
    /// ``minimumTokenLength``. The one check every token source goes through.
    public static func validatedToken(_ text: String, source: String) throws(ValidationError) -> String {
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= minimumTokenLength else {
            throw ValidationError(field: source, message: "the token must be at least \(minimumTokenLength) characters")
        }
        return token
    }

    /// Who made `request`. A bearer token is checked through the throttle (its client
    /// is the request's peer address); a session cookie is not (its id is 256 random
    /// bits, not a guess worth limiting).
    public func authenticate(_ request: HTTPServer.Request) -> Authentication {
        guard let token else { return .identified(Identity(kind: .local, csrf: localCSRF, label: "local")) }
        if let authorization = request.header("authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            let presented = parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : ""
            switch throttle.attempt(client: request.peer ?? Self.unknownClient, { Self.constantTimeEqual(presented, token) }) {
            case .passed: return .identified(Identity(kind: .bearer, csrf: "", label: "token"))
            case .failed: return .wrongToken
            case .throttled(let wait): return .throttled(retryAfter: wait)
            }
        }
        if let session = request.cookie(Self.cookieName), let csrf = liveSession(session) {
            return .identified(Identity(kind: .session, csrf: csrf, label: "session " + String(session.prefix(8))))
        }
        return .anonymous
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

    /// Starts a session when `candidate` is the token, checked through the throttle as
    /// an attempt by `client` (the request's peer address).
    public func login(candidate: String, client: String?) -> LoginResult {
        guard let token else { return .refused }
        switch throttle.attempt(client: client ?? Self.unknownClient, { Self.constantTimeEqual(candidate, token) }) {
        case .passed: return .session(startSession())
        case .failed: return .refused
        case .throttled(let wait): return .throttled(retryAfter: wait)
        }
    }

    /// A new session (making room when there are too many); returns its id.
    private func startSession() -> String {
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
