extension FaultServer {
    /// How the server answers a request.
    public indirect enum Behavior: Sendable {
        /// A complete response. `Content-Length` is added; headers are sent as given.
        case respond(status: Int, headers: [(String, String)], body: String)
        /// Reads the request, then closes the connection without answering.
        case dropConnection
        /// Waits `delay` (cut short by ``FaultServer/stop()``), then behaves as `then`.
        case slow(delay: Duration, then: Behavior)
        /// Waits up to `delay`, watching the connection: when the client closes it (an
        /// aborted request) the exchange ends there; otherwise behaves as `then`. The
        /// request's ``FaultServer/RequestSpan`` records which.
        case holdUntilClientLeaves(delay: Duration, then: Behavior)
        /// Waits until ``FaultServer/releaseHolds()`` is called (or the server stops), then
        /// behaves as `then`: a test decides when the answer comes, without a timing.
        case holdUntilReleased(then: Behavior)
        /// `200` with an `application/octet-stream` body of `bytes` bytes.
        case hugeBody(bytes: Int)
        /// `200` with a small HTML page, as a captive portal would send.
        case html200
        /// `200` with `{"ok":true}` as `application/json`.
        case json200
        /// Reads the request, writes `bytes` exactly as given (an HTTP/0.9 or garbage
        /// answer), then closes the connection.
        case raw(bytes: [UInt8])
        /// Behaves as `answer` returns for the request: a receiver whose answer depends on
        /// what was sent (one that echoes a header back, transformed).
        case reply(@Sendable (RecordedRequest) -> Behavior)
    }

    /// The HTML body sent by ``Behavior/html200``.
    public static let htmlBody = "<!DOCTYPE html><html><head><title>Sign in</title></head><body><h1>Wi-Fi login</h1></body></html>"
    /// The JSON body sent by ``Behavior/json200``.
    public static let jsonBody = #"{"ok":true}"#

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status"
        }
    }
}
