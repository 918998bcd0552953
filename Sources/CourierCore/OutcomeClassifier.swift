import Foundation

/// Turns a ``TransportOutcome`` into a ``Classification``. Pure: the only
/// inputs are the outcome, the job's expected content type and `now` (for an
/// HTTP-date `Retry-After`).
///
/// | Outcome | Class | May have been delivered | Retryable |
/// |---|---|---|---|
/// | not sent (DNS, connect, TLS) | `transport` | no | yes, any method |
/// | blocked (scheme, malformed URL) | `client` | no | no → `permanent` |
/// | refused by this worker's configuration (private address, secret) | `client` | no | handed back, no attempt used |
/// | timeout before connecting | `timeout` | no | yes, any method |
/// | timeout after connecting | `timeout` | yes | if idempotent or keyed |
/// | connection lost | `connection_lost` | yes | if idempotent or keyed |
/// | 2xx (content type as expected) | success | | |
/// | 2xx breaking `expect_content_type` | `invalid_response` | yes | no |
/// | 304 Not Modified | success | | |
/// | other 3xx | `client` | yes | no → `permanent` (redirects are not followed; the message names the `Location`) |
/// | 408, 425 | `server` | no | yes, any method |
/// | 429 | `throttled` | no | yes, any method |
/// | 503 with a valid `Retry-After` | `throttled` | no | yes, any method |
/// | 503 without one | `server` | no | yes, any method |
/// | 501 Not Implemented | `server` | yes | no → `permanent` (not breaker evidence) |
/// | other 5xx, 1xx, status ≥ 600 | `server` | yes | if idempotent or keyed |
/// | other 4xx (incl. 401, 403) | `client` | yes | no → `permanent` |
/// | cancelled | `cancelled` | as reported | no → `cancelled` |
///
/// Choices worth knowing:
/// - A blocked destination is `client`: the job asks for something Courier will
///   not do, the destination's health is not in question, so it does not count
///   against the breaker.
/// - 3xx: Courier never follows redirects (a POST silently turning into a GET,
///   or a request leaving for another host, is worse than stopping). The job is
///   dead-lettered as `permanent` so a person updates its URL. 304 answers a
///   conditional request the job made itself and counts as success.
/// - 408 and 425 say the server did not process the request, so they are
///   retried for any method; their class is `server`.
/// - 204 and 205 carry no content, so `expect_content_type` is not applied to them.
/// - An expected JSON type also requires the body to parse as JSON; when the
///   body was truncated, its first non-blank byte must be able to start JSON.
/// - `Retry-After` is honoured on any retryable response that carries it.
public enum OutcomeClassifier {
    /// How many body bytes an `invalid_response` message quotes.
    public static let bodyExcerptLength = 64

    /// Classifies one outcome.
    public static func classify(_ outcome: TransportOutcome, expectContentType: String?, now: Date) -> Classification {
        switch outcome {
        case .notSent(let detail):
            return Classification(succeeded: false, errorClass: .transport, message: "not sent: \(detail)", mayHaveBeenDelivered: false, retryable: true)
        case .blocked(let detail):
            return Classification(succeeded: false, errorClass: .client, message: "refused to send: \(detail)", mayHaveBeenDelivered: false, retryable: false)
        case .refusedByConfiguration(let detail):
            var refused = Classification(succeeded: false, errorClass: .client, message: "this worker may not send it: \(detail)",
                                         mayHaveBeenDelivered: false, retryable: false)
            refused.refusedByConfiguration = true
            return refused
        case .timedOut(let connected, let detail):
            let phase = connected ? "after the connection was made" : "before a connection was made"
            return Classification(succeeded: false, errorClass: .timeout, message: "timed out \(phase): \(detail)", mayHaveBeenDelivered: connected, retryable: true)
        case .connectionLost(let detail):
            return Classification(succeeded: false, errorClass: .connectionLost, message: "connection lost: \(detail)", mayHaveBeenDelivered: true, retryable: true)
        case .cancelled(let maybeSent):
            let message = maybeSent ? "cancelled while the request was in flight" : "cancelled before the request was sent"
            return Classification(succeeded: false, errorClass: .cancelled, message: message, mayHaveBeenDelivered: maybeSent, retryable: false)
        case .response(let response):
            return classify(response, expectContentType: expectContentType, now: now)
        case .withheld(let detail):
            // Retryable and not breaker evidence, should a caller not look at `withheld`.
            var withheld = Classification(succeeded: false, errorClass: .transport, message: "not sent: \(detail)",
                                          mayHaveBeenDelivered: false, retryable: true)
            withheld.countsAsBreakerFailure = false
            withheld.withheld = true
            return withheld
        }
    }

    private static func classify(_ response: HTTPResponseSummary, expectContentType: String?, now: Date) -> Classification {
        let status = response.status
        let retryAfter = response.header("Retry-After").flatMap { RetryAfter.parse($0, now: now) }
        let afterText = retryAfter.map { ", Retry-After \(DurationParser.format($0))" } ?? ""

        func failure(_ errorClass: ErrorClass, _ message: String, delivered: Bool, retryable: Bool) -> Classification {
            Classification(
                succeeded: false, errorClass: errorClass, status: status, message: message,
                mayHaveBeenDelivered: delivered, retryable: retryable, retryAfter: retryable ? retryAfter : nil)
        }

        switch status {
        case 200...299:
            if let expected = expectContentType, status != 204, status != 205,
               let problem = contentProblem(response, expected: expected) {
                return failure(.invalidResponse, problem, delivered: true, retryable: false)
            }
            // Say what was checked: a body over the cap was only checked as far as it was read.
            let partly = expectContentType != nil && response.bodyTruncated
                ? " (the body exceeded the response-body cap: only its content type and start were checked)" : ""
            return Classification(succeeded: true, errorClass: nil, status: status, message: "HTTP \(status)\(partly)", mayHaveBeenDelivered: true, retryable: false)
        case 304:
            return Classification(succeeded: true, errorClass: nil, status: status, message: "HTTP 304 (not modified)", mayHaveBeenDelivered: true, retryable: false)
        case 300...399:
            // Where it pointed, without query or fragment (they may carry tokens).
            let target = response.header("Location").map { location -> String in
                let cut = location.firstIndex { $0 == "?" || $0 == "#" }
                return " to \(Quoting.quote(cut.map { String(location[..<$0]) + "?..." } ?? location, limit: 200))"
            } ?? ""
            return failure(.client, "HTTP \(status): redirect\(target) not followed; update the job's URL", delivered: true, retryable: false)
        case 408, 425:
            return failure(.server, "HTTP \(status): the server did not process the request\(afterText)", delivered: false, retryable: true)
        case 429:
            return failure(.throttled, "HTTP 429: too many requests\(afterText)", delivered: false, retryable: true)
        case 503:
            if retryAfter != nil {
                return failure(.throttled, "HTTP 503: service unavailable\(afterText)", delivered: false, retryable: true)
            }
            return failure(.server, "HTTP 503: service unavailable", delivered: false, retryable: true)
        case 401, 403:
            return failure(.client, "HTTP \(status): not authorized; never repeated", delivered: true, retryable: false)
        case 400...499:
            return failure(.client, "HTTP \(status)", delivered: true, retryable: false)
        case 501:
            // Not Implemented: the server does not support the method; retrying cannot change that,
            // and it says nothing about the destination's health.
            var notImplemented = failure(.server, "HTTP 501: not implemented; retrying cannot change it", delivered: true, retryable: false)
            notImplemented.countsAsBreakerFailure = false
            return notImplemented
        case 500...599:
            return failure(.server, "HTTP \(status)\(afterText)", delivered: true, retryable: true)
        default:
            return failure(.server, "HTTP \(status): unexpected status\(afterText)", delivered: true, retryable: true)
        }
    }

    /// Why a 2xx response breaks the expectation, or nil if it meets it.
    static func contentProblem(_ response: HTTPResponseSummary, expected: String) -> String? {
        let expectedType = MediaType(expected)
        let expectedText = expectedType?.description ?? expected.trimmingWhitespace().asciiLowercased
        let received = response.contentType
        let excerpt = "body starts \"\(Quoting.escape(bytes: response.bodyPrefix, limit: bodyExcerptLength))\""
        let receivedText = received.map { "Content-Type \(Quoting.quote($0, limit: 100))" } ?? "no Content-Type"
        let prefix = "HTTP \(response.status) with \(receivedText) where \(expectedText) was expected"

        let matches: Bool
        if let expectedType, let receivedType = received.flatMap(MediaType.init) {
            matches = expectedType.accepts(receivedType)
        } else if let received {
            let essence = received.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            matches = essence.trimmingWhitespace().asciiLowercased == expectedText
        } else {
            matches = false
        }
        guard matches else { return "\(prefix); \(excerpt)" }

        if expectedType?.isJSON == true, !looksLikeJSON(response.bodyPrefix, complete: !response.bodyTruncated) {
            return "HTTP \(response.status) with \(receivedText): the body is not valid JSON; \(excerpt)"
        }
        return nil
    }

    /// Whether `body` is JSON. A complete body must parse; a truncated one must
    /// at least begin (after blanks and a UTF-8 BOM) with a byte that can start JSON.
    static func looksLikeJSON(_ body: [UInt8], complete: Bool) -> Bool {
        if complete { return JSONSyntax.isValid(body) }
        var slice = body[...]
        if slice.starts(with: [0xEF, 0xBB, 0xBF]) { slice = slice.dropFirst(3) }
        guard let first = slice.first(where: { !$0.isASCIIWhitespace }) else { return false }
        return Array("{[\"-0123456789tfn".utf8).contains(first)
    }
}
