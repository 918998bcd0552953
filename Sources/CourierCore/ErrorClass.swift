/// The class of one failed attempt, as recorded in a job's `errors` history.
///
/// The raw values are the contract's names and are stored in the database.
public enum ErrorClass: String, Sendable, CaseIterable, Codable {
    /// Certainly not delivered: name resolution, connect or TLS failure.
    case transport
    /// The request timed out (before or after the connection was made).
    case timeout
    /// The connection broke after the request was (maybe) sent.
    case connectionLost = "connection_lost"
    /// A 5xx answer (and 408/425, see `OutcomeClassifier`).
    case server
    /// 429, or 503 with a usable `Retry-After`.
    case throttled
    /// A 4xx (other than 408, 425, 429), a 3xx, or a request Courier refused to send.
    case client
    /// A 2xx whose body breaks the job's `expect_content_type`.
    case invalidResponse = "invalid_response"
    /// The worker holding the job lost its lease (for example it was killed).
    case leaseExpired = "lease_expired"
    /// The attempt was aborted by `jobctl cancel`.
    case cancelled

    /// Whether an attempt of this class is evidence that the destination is down.
    ///
    /// Only `transport`, `timeout`, `connection_lost` and `server` count. Client
    /// errors and invalid responses prove the destination is up; throttling is
    /// handled by `Retry-After`.
    public var countsAsBreakerFailure: Bool {
        switch self {
        case .transport, .timeout, .connectionLost, .server: true
        case .throttled, .client, .invalidResponse, .leaseExpired, .cancelled: false
        }
    }

    /// Parses a stored class name.
    public static func parse(_ text: String, field: String = "class") throws(ValidationError) -> ErrorClass {
        guard let value = ErrorClass(rawValue: text) else {
            throw ValidationError(field: field, message: "unknown error class \(Quoting.quote(text)); expected one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }
}
