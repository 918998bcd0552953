import CourierCore

/// Sends HTTP requests and reports what happened as a ``TransportOutcome``.
///
/// Implementations never throw: every failure is an outcome that says whether the
/// request certainly did not reach the server (`notSent`, `blocked`,
/// `timedOut(connected: false)`) or may have (`timedOut(connected: true)`,
/// `connectionLost`, `cancelled(maybeSent: true)`).
///
/// Cancelling the calling task aborts the transfer promptly and returns
/// `.cancelled(maybeSent:)`.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and waits for its outcome.
    func send(_ request: HTTPRequest) async -> TransportOutcome
}
