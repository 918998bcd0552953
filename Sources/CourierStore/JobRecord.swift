import CourierCore
import Foundation
import Postgres

/// A job as an operator sees it: waiting, running, succeeded or dead.
/// Header values of sensitive headers are redacted before they leave the store.
public struct JobRecord: Sendable, Equatable, Encodable {
    public enum Status: String, Sendable, Encodable {
        case available, running, succeeded, dead
    }
    public var id: Int64
    public var status: Status
    public var kind: String
    public var queue: String
    public var priority: Int
    public var runAt: Date?
    public var attempt: Int
    public var maxAttempts: Int
    public var deadline: Date?
    public var destination: String
    public var method: String
    public var url: String?
    /// Header names with values, sensitive ones redacted; secret references shown as `{"secret": NAME}`.
    public var headers: [String: String]
    public var idempotencyKey: String?
    public var uniqueKey: String?
    public var timeoutMilliseconds: Int
    public var expectContentType: String?
    public var createdAt: Date
    /// The attempt history, oldest first.
    public var errors: [AttemptRecord]
    public var leasedBy: String?
    public var leaseExpiresAt: Date?
    public var cancelRequestedAt: Date?
    /// Set while the destination's breaker is open: the job waits, using no attempts.
    public var heldSince: Date?
    /// For a dead job: why.
    public var deadReason: String?
    public var finishedAt: Date?
    /// For a succeeded job: the final HTTP status and the duration of the last attempt.
    public var finalStatus: Int?
    public var durationMilliseconds: Int?
    /// The NAME of the secret that signs the job's attempts (never its value)...
    public var signingSecret: String? = nil
    /// ...and whether it is the job's own or its destination's default (for a job that is no
    /// longer waiting, the destination's default as it is now).
    public var signingSecretFrom: SigningSecretChoice.Source? = nil
    /// For a dead job: the id of its dead letter (`jobctl dead show ID`).
    public var deadLetterID: Int64? = nil
    /// For a waiting job that workers refused because their configuration cannot run it: the
    /// refusals in a row since its last real attempt, since when, and the last reason.
    public var refusal: Refusal? = nil
    /// For a waiting or running job: the W3C `traceparent` it was enqueued with, and its `tracestate`.
    public var traceparent: String? = nil
    public var tracestate: String? = nil
    /// The tenant the job works for (`fairness_key`); nil: the default key.
    public var fairnessKey: String? = nil

    /// Why workers keep handing a job back (``refusal``).
    public struct Refusal: Sendable, Equatable, Encodable {
        public var count: Int
        public var since: Date
        public var reason: String
    }
    /// For a succeeded job: the archive (`courier.completed_jobs`) keeps only some of the
    /// job's fields, so ``priority``, ``maxAttempts``, ``headers`` and
    /// ``timeoutMilliseconds`` hold placeholders that the JSON leaves out, never shows.
    public var archivedFieldsOnly = false

    /// Sets ``signingSecret`` and ``signingSecretFrom`` from the two names a row holds.
    mutating func setSigningSecret(own: String?, destinationDefault: String?) {
        let choice = SigningSecretChoice.choose(own: own, destinationDefault: destinationDefault)
        signingSecret = choice?.name
        signingSecretFrom = choice?.source
    }

    enum CodingKeys: String, CodingKey {
        case id, status, kind, queue, priority, runAt = "run_at", attempt, maxAttempts = "max_attempts", deadline
        case destination, method, url, headers, idempotencyKey = "idempotency_key", uniqueKey = "unique_key"
        case timeoutMilliseconds = "timeout_ms", expectContentType = "expect_content_type", createdAt = "created_at"
        case errors, leasedBy = "leased_by", leaseExpiresAt = "lease_expires_at", cancelRequestedAt = "cancel_requested_at"
        case heldSince = "held_since"
        case deadReason = "dead_reason", finishedAt = "finished_at", finalStatus = "final_status"
        case durationMilliseconds = "duration_ms"
        case signingSecret = "signing_secret", signingSecretFrom = "signing_secret_from"
        case deadLetterID = "dead_letter_id"
        case refusal, traceparent, tracestate, fairnessKey = "fairness_key"
    }

    /// The fields the succeeded-jobs archive does not keep (see ``archivedFieldsOnly``).
    public static let fieldsNotArchived: Set<String> = [
        CodingKeys.priority.rawValue, CodingKeys.maxAttempts.rawValue, CodingKeys.headers.rawValue,
        CodingKeys.timeoutMilliseconds.rawValue,
    ]

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(status, forKey: .status)
        try c.encode(kind, forKey: .kind)
        try c.encode(queue, forKey: .queue)
        try c.encodeIfPresent(runAt, forKey: .runAt)
        try c.encode(attempt, forKey: .attempt)
        if !archivedFieldsOnly {
            try c.encode(priority, forKey: .priority)
            try c.encode(maxAttempts, forKey: .maxAttempts)
            try c.encode(headers, forKey: .headers)
            try c.encode(timeoutMilliseconds, forKey: .timeoutMilliseconds)
        }
        try c.encodeIfPresent(deadline, forKey: .deadline)
        try c.encode(destination, forKey: .destination)
        try c.encode(method, forKey: .method)
        try c.encodeIfPresent(url, forKey: .url)
        try c.encodeIfPresent(idempotencyKey, forKey: .idempotencyKey)
        try c.encodeIfPresent(uniqueKey, forKey: .uniqueKey)
        try c.encodeIfPresent(expectContentType, forKey: .expectContentType)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(errors, forKey: .errors)
        try c.encodeIfPresent(leasedBy, forKey: .leasedBy)
        try c.encodeIfPresent(leaseExpiresAt, forKey: .leaseExpiresAt)
        try c.encodeIfPresent(cancelRequestedAt, forKey: .cancelRequestedAt)
        try c.encodeIfPresent(heldSince, forKey: .heldSince)
        try c.encodeIfPresent(deadReason, forKey: .deadReason)
        try c.encodeIfPresent(finishedAt, forKey: .finishedAt)
        try c.encodeIfPresent(finalStatus, forKey: .finalStatus)
        try c.encodeIfPresent(durationMilliseconds, forKey: .durationMilliseconds)
        try c.encodeIfPresent(signingSecret, forKey: .signingSecret)
        try c.encodeIfPresent(signingSecretFrom, forKey: .signingSecretFrom)
        try c.encodeIfPresent(deadLetterID, forKey: .deadLetterID)
        try c.encodeIfPresent(refusal, forKey: .refusal)
        try c.encodeIfPresent(traceparent, forKey: .traceparent)
        try c.encodeIfPresent(tracestate, forKey: .tracestate)
        try c.encodeIfPresent(fairnessKey, forKey: .fairnessKey)
    }


    /// The stored headers object made safe to show: sensitive values redacted.
    static func displayHeaders(_ json: String) -> [String: String] {
        var result: [String: String] = [:]
        for header in StoredHeader.headers(fromJSON: json) {
            switch header.value {
            case .secret(let secret):
                result[header.name] = "{\"secret\": \"\(secret)\"}"
            case .literal(let value):
                result[header.name] = Redaction.isSensitiveHeader(header.name) ? Redaction.placeholder : value
            }
        }
        return result
    }
}

