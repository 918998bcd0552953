/// The meaning of one attempt's outcome: the input to ``RetryDecider``, to
/// the attempt history and to breaker evidence.
public struct Classification: Sendable, Equatable {
    /// The attempt succeeded (2xx meeting the expected content type, or 304).
    public var succeeded: Bool
    /// The failure's class; nil on success.
    public var errorClass: ErrorClass?
    /// The HTTP status, when a response arrived.
    public var status: Int?
    /// A short human-readable account. Never contains header values
    /// (except the `Content-Type` of an invalid response, which is the point).
    public var message: String
    /// The request may have reached and been processed by the server.
    public var mayHaveBeenDelivered: Bool
    /// Retrying could help. False for permanent failures (client, invalid
    /// response, refused by the SSRF guard, cancelled) and for success.
    public var retryable: Bool
    /// The server's `Retry-After`, parsed and not yet capped.
    public var retryAfter: Duration?
    /// Whether this attempt is evidence that the destination is down
    /// (`transport`, `timeout`, `connection_lost`, `server`).
    public var countsAsBreakerFailure: Bool
    /// The worker's own configuration stopped the attempt (see
    /// ``TransportOutcome/refusedByConfiguration(_:)``, a missing secret, no handler for
    /// the kind): the job is handed back without using an attempt, for another worker.
    public var refusedByConfiguration = false
    /// The request was withheld just before it was written (see ``TransportOutcome/withheld(_:)``):
    /// its destination was held back after the job was claimed. Nothing was sent; the job goes
    /// back to the queue without using an attempt.
    public var withheld = false

    /// Creates a classification; `countsAsBreakerFailure` follows the class.
    public init(
        succeeded: Bool,
        errorClass: ErrorClass?,
        status: Int? = nil,
        message: String,
        mayHaveBeenDelivered: Bool,
        retryable: Bool,
        retryAfter: Duration? = nil
    ) {
        self.succeeded = succeeded
        self.errorClass = errorClass
        self.status = status
        self.message = message
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
        self.retryable = retryable
        self.retryAfter = retryAfter
        self.countsAsBreakerFailure = errorClass?.countsAsBreakerFailure ?? false
    }

    /// The reason to use if this outcome ends the job without a retry:
    /// `invalid_response`, `cancelled`, or `permanent` for every other
    /// non-retryable failure. Nil for success and retryable failures.
    public var permanentReason: DeadLetterReason? {
        guard !succeeded, !retryable else { return nil }
        switch errorClass {
        case .invalidResponse: return .invalidResponse
        case .cancelled: return .cancelled
        default: return .permanent
        }
    }

    /// Refused on this side before anything was sent (address guard, a missing or malformed
    /// header or signing secret, no handler): the destination never answered, so a probe like this says nothing about it.
    public var isLocalRefusal: Bool {
        !succeeded && errorClass == .client && status == nil && !mayHaveBeenDelivered
    }

    /// The attempt of a worker that lost its lease (died or hung). The request
    /// may have been sent, so it is ambiguous for non-idempotent jobs without a key.
    public static func leaseExpired(message: String = "the worker's lease expired before it reported a result") -> Classification {
        Classification(succeeded: false, errorClass: .leaseExpired, message: message, mayHaveBeenDelivered: true, retryable: true)
    }
}
