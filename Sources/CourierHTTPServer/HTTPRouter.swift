/// One route: which requests it answers, and how.
public struct HTTPRoute: Sendable {
    /// How a route matches a request's path (the query string is not part of it).
    public enum Match: Sendable, Equatable {
        /// The path equals this.
        case exact(String)
        /// The path starts with this (`/jobs/` for `/jobs/ID`); the handler reads the rest.
        case prefix(String)

        func matches(_ path: String) -> Bool {
            switch self {
            case .exact(let text): path == text
            case .prefix(let text): path.hasPrefix(text)
            }
        }
    }

    public var match: Match
    /// The methods answered; `HEAD` is answered wherever `GET` is (without a body).
    public var methods: [String]
    /// A health probe: answered from the reserved slots too, so a flood of idle
    /// connections cannot make it fail (see ``HTTPServer``).
    public var isProbe: Bool
    /// The handler may block (it queries a database): it runs on a handler thread,
    /// never on the server thread (see ``HTTPServer/Limits/handlerThreads``).
    public var blocking: Bool
    public var handler: HTTPServer.Handler

    public init(_ match: Match, methods: [String] = ["GET"], isProbe: Bool = false, blocking: Bool = false,
                handler: @escaping HTTPServer.Handler) {
        self.match = match
        self.methods = methods
        self.isProbe = isProbe
        self.blocking = blocking
        self.handler = handler
    }

    /// The methods as the `Allow` header lists them.
    var allowed: [String] { methods.contains("GET") && !methods.contains("HEAD") ? methods + ["HEAD"] : methods }
}

/// Routes requests to the first route whose path matches: 404 (naming the exact paths)
/// when none does, 405 with `Allow` when the method is not one of the route's.
public struct HTTPRouter: Sendable {
    public var routes: [HTTPRoute]

    public init(_ routes: [HTTPRoute]) {
        self.routes = routes
    }

    /// The route for `request`'s path, if any.
    public func route(for request: HTTPServer.Request) -> HTTPRoute? {
        routes.first { $0.match.matches(request.path) }
    }

    /// Whether `request` is for a probe route with an allowed method.
    public func isProbe(_ request: HTTPServer.Request) -> Bool {
        guard let route = route(for: request) else { return false }
        return route.isProbe && route.allowed.contains(request.method)
    }

    /// The answer to `request`.
    public func respond(to request: HTTPServer.Request) -> HTTPServer.Response {
        guard let route = route(for: request) else {
            let paths = routes.compactMap { route -> String? in
                if case .exact(let path) = route.match { return path }
                return nil
            }
            let hint = paths.isEmpty ? "" : "; try " + Self.list(paths)
            return HTTPServer.Response(status: 404, text: "not found\(hint)\n")
        }
        guard route.allowed.contains(request.method) else {
            return HTTPServer.Response(status: 405, text: "method not allowed\n",
                                       headers: [.init("Allow", route.allowed.joined(separator: ", "))])
        }
        return route.handler(request)
    }

    /// `a`, `a or b`, `a, b or c`.
    static func list(_ items: [String]) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " or " + items[items.count - 1]
    }
}
