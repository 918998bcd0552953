import CourierCore
import Foundation

/// Everything needed to enqueue one HTTP job; the Swift twin of `courier.enqueue(...)`.
///
/// Field names match the SQL parameters and the NDJSON keys, so a validation
/// error names the same field whichever way the job came in.
public struct EnqueueRequest: Sendable, Equatable {
    /// How the job's idempotency key is chosen.
    public enum IdempotencyKey: Sendable, Equatable {
        /// A fresh random key is generated at enqueue (the default).
        case generated
        /// The caller's own key.
        case custom(String)
        /// No key: a non-idempotent request that may have been delivered is never repeated.
        case none
    }

    /// A header value: a literal, or a reference to a secret resolved by the worker at send time.
    public enum HeaderValue: Sendable, Equatable {
        case literal(String)
        case secret(name: String)
    }

    public var url: String
    public var method: String = "POST"
    /// Header names and values, in the order given.
    public var headers: [(name: String, value: HeaderValue)] = []
    public var body: String?
    public var queue: String = "default"
    public var priority: Int = 0
    /// When the job may first run; `nil` means now (the database's clock).
    public var runAt: Date?
    public var maxAttempts: Int = JobDefaults.maxAttempts
    public var deadline: Date?
    public var idempotencyKey: IdempotencyKey = .generated
    public var uniqueKey: String?
    /// The circuit-breaker key; `nil` derives `scheme://host:port` from `url`.
    public var destination: String?
    public var timeoutMilliseconds: Int = JobDefaults.timeoutMilliseconds
    public var expectContentType: String?
    /// The NAME of the secret that signs each attempt (Standard Webhooks), resolved by the
    /// worker like header secrets; `nil` uses the destination's default, if any.
    public var signingSecret: String?
    /// The W3C `traceparent` of the span the job was enqueued in (``TraceContext``): each
    /// attempt's span links to it. Nil: none (SQL callers may `set local courier.traceparent`).
    public var traceparent: String?
    /// The W3C `tracestate` that goes with ``traceparent``.
    public var tracestate: String?
    /// The tenant the job works for (``FairnessKey``): a queue's keys share its starts by
    /// weight (`jobctl tenant set`). Nil: the default key, shared by every job without one.
    public var fairnessKey: String?

    public init(url: String) {
        self.url = url
    }

    public static func == (lhs: EnqueueRequest, rhs: EnqueueRequest) -> Bool {
        lhs.url == rhs.url && lhs.method == rhs.method
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
            && lhs.body == rhs.body && lhs.queue == rhs.queue && lhs.priority == rhs.priority && lhs.runAt == rhs.runAt
            && lhs.maxAttempts == rhs.maxAttempts && lhs.deadline == rhs.deadline && lhs.idempotencyKey == rhs.idempotencyKey
            && lhs.uniqueKey == rhs.uniqueKey && lhs.destination == rhs.destination
            && lhs.timeoutMilliseconds == rhs.timeoutMilliseconds && lhs.expectContentType == rhs.expectContentType
            && lhs.signingSecret == rhs.signingSecret && lhs.traceparent == rhs.traceparent && lhs.tracestate == rhs.tracestate
            && lhs.fairnessKey == rhs.fairnessKey
    }
}

extension EnqueueRequest {
    /// The headers as the JSON object stored in `courier.jobs.headers`, names sorted.
    public var headersJSON: String {
        if headers.isEmpty { return "{}" }
        var json = "{"
        for (index, header) in headers.sorted(by: { $0.name < $1.name }).enumerated() {
            if index > 0 { json += "," }
            JSONText.appendQuoted(header.name, to: &json)
            json += ":"
            switch header.value {
            case .literal(let value):
                JSONText.appendQuoted(value, to: &json)
            case .secret(let name):
                json += #"{"secret":"#
                JSONText.appendQuoted(name, to: &json)
                json += "}"
            }
        }
        return json + "}"
    }

    /// The destination the job will have: the explicit one, or the one derived from the URL.
    /// An explicit destination is stored in its canonical form (``Destination/canonicalKey(_:)``).
    public func resolvedDestination() throws(ValidationError) -> String {
        if let destination { return Destination.canonicalKey(destination) }
        return try Destination.derive(fromURL: url)
    }
}
