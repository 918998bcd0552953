/// What happened to one request, as the HTTP layer reports it.
///
/// The cases separate "certainly not delivered" from "maybe delivered", which
/// decides whether a non-idempotent request may be repeated. The strings are
/// human-readable details (never header values).
public enum TransportOutcome: Sendable, Equatable {
    /// Name resolution, connect or TLS failed: certainly not delivered.
    case notSent(String)
    /// Courier refused to send (disallowed scheme, malformed URL): never sent, permanent.
    case blocked(String)
    /// This worker's own configuration forbids the request (the address guard refused a
    /// private address: `--allow-private-networks` is not given; a secret it cannot
    /// resolve). Never sent; another worker of the fleet may be allowed to send it.
    case refusedByConfiguration(String)
    /// The request timed out. `connected: false` means certainly not delivered.
    case timedOut(connected: Bool, String)
    /// The connection broke after the request was (maybe) sent.
    case connectionLost(String)
    /// A complete response arrived.
    case response(HTTPResponseSummary)
    /// Aborted by cancel or shutdown; `maybeSent` if the request may have left.
    case cancelled(maybeSent: Bool)
    /// Held back by the sender at the last moment, just before the request would have been
    /// written (``HTTPRequest/mayStillSend`` said no): certainly not delivered, and nothing
    /// about the destination's health.
    case withheld(String)
}
