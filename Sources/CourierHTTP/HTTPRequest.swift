import CourierCore

/// One outbound HTTP request, as handed to an ``HTTPTransport``.
public struct HTTPRequest: Sendable {
    /// The method, sent as written (for example `GET`, `POST`, `PUT`).
    public var method: String
    /// The absolute URL; only `http` and `https` are allowed.
    public var url: String
    /// Request headers, sent in order. Values never appear in outcome messages.
    public var headers: [HTTPHeader]
    /// The body, sent with a `Content-Length`; `nil` sends none.
    public var body: [UInt8]?
    /// The limit for the whole exchange: connect, send and receive.
    public var timeout: Duration
    /// A separate limit for establishing the connection (TCP and TLS); `nil`
    /// leaves it bounded only by ``timeout``.
    public var connectTimeout: Duration?
    /// Asked once, when a connection is ready and just before the request would be written
    /// (after any wait for a connection to the host): `false` withholds it, and the outcome is
    /// ``TransportOutcome/withheld(_:)``. Runs on the transport's thread: it must be quick and
    /// must not block. `nil` always sends.
    public var mayStillSend: (@Sendable () -> Bool)?

    /// Creates a request.
    /// - Parameters:
    ///   - method: the HTTP method (default `GET`).
    ///   - url: an absolute `http` or `https` URL.
    ///   - headers: request headers, sent in order.
    ///   - body: the body, or `nil` for none.
    ///   - timeout: the limit for the whole exchange (default 30 s).
    ///   - connectTimeout: a separate connect limit (default none).
    public init(
        method: String = "GET",
        url: String,
        headers: [HTTPHeader] = [],
        body: [UInt8]? = nil,
        timeout: Duration = .seconds(30),
        connectTimeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }
}
