/// What the HTTP layer kept of a full response: the status, the headers and
/// the start of the body (bodies are capped in size).
public struct HTTPResponseSummary: Sendable, Equatable {
    /// The status code, e.g. 200.
    public var status: Int
    /// The response headers in the order received.
    public var headers: [HTTPHeader]
    /// The first bytes of the body, up to the transport's cap.
    public var bodyPrefix: [UInt8]
    /// Whether the body was longer than `bodyPrefix`.
    public var bodyTruncated: Bool

    /// Creates a summary.
    public init(status: Int, headers: [HTTPHeader] = [], bodyPrefix: [UInt8] = [], bodyTruncated: Bool = false) {
        self.status = status
        self.headers = headers
        self.bodyPrefix = bodyPrefix
        self.bodyTruncated = bodyTruncated
    }

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.value(forName: name)
    }

    /// The `Content-Type` header, if present.
    public var contentType: String? { header("Content-Type") }
}
