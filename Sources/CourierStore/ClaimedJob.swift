import Foundation
import Postgres

/// A job leased to a worker: everything needed to run it, plus the fence
/// (`id`, `lease`, the worker's id) that every later write about it must match.
public struct ClaimedJob: Sendable, Equatable {
    public var id: Int64
    public var kind: String
    public var queue: String
    /// The attempt this lease is for, 1-based: it was incremented by the claim.
    public var attempt: Int
    /// The lease's fence token (`courier.jobs.lease_seq`): every claim of the job bumps it and
    /// nothing else changes it, so unlike `attempt` (given back by hand-backs and unattempted
    /// retries) it never names two leases of the job (DESIGN.md invariant 2).
    public var lease: Int64
    public var maxAttempts: Int
    public var deadline: Date?
    public var destination: String
    public var method: String
    public var url: String?
    /// The stored headers object (values may be `{"secret": NAME}` references).
    public let headersJSON: String
    /// ``headersJSON`` read, in name order. Parsed where the job is claimed (on the claimer's
    /// own thread, with the row), not on every use.
    public let headers: [StoredHeader]
    public var body: String?
    public var timeoutMilliseconds: Int
    public var expectContentType: String?
    public var idempotencyKey: String?
    /// Arguments of a job kind other than `http`.
    public var argsJSON: String?
    /// The previous retry delay, for decorrelated jitter.
    public var lastDelayMilliseconds: Int64?
    public var cancelRequested: Bool
    /// When the job was enqueued.
    public var createdAt: Date?
    /// The NAME of the job's own signing secret, if it has one.
    public var signingSecret: String?
    /// The NAME of the signing secret its destination sets as a default (`courier.destinations`),
    /// read at claim time, so a change applies from the next claim on.
    public var destinationSigningSecret: String?
    /// The refusals in a row of this job by workers whose configuration could not run it,
    /// since its last real attempt (`courier.refuse_jobs`); 0 when the last claim ran it.
    public var refusals: Int
    /// When the first of those refusals happened (nil without any).
    public var refusedSince: Date?
    /// The W3C `traceparent` the job was enqueued with (its enqueuing span), if any.
    public var traceparent: String? {
        get { trace?.traceparent }
        set { updateTrace { $0.traceparent = newValue } }
    }
    /// The W3C `tracestate` that goes with ``traceparent``.
    public var tracestate: String? {
        get { trace?.tracestate }
        set { updateTrace { $0.tracestate = newValue } }
    }
    /// When the job became due (`run_at`): the time it waited before this attempt is measured from it.
    public var runAt: Date?
    /// The `traceparent` of the previous attempt's span, as recorded in its error entry
    /// (`errors[-1].traceparent`); nil for a first attempt or one whose attempt was not traced.
    public var previousAttemptTraceparent: String? {
        get { trace?.previousAttemptTraceparent }
        set { updateTrace { $0.previousAttemptTraceparent = newValue } }
    }
    /// How long the job was due while its destination's breaker held it back since its last
    /// attempt (`courier.jobs.held_ms`, summed by the keeper on release); nil when it was not held.
    public var heldMilliseconds: Int64?

    /// Set by the worker when the job's destination opted in to trace propagation
    /// (`jobctl destination set D --propagate-trace`): the `traceparent` and `tracestate`
    /// headers the request carries. Not stored.
    public var outboundTraceparent: String? {
        get { trace?.outboundTraceparent }
        set { updateTrace { $0.outboundTraceparent = newValue } }
    }
    public var outboundTracestate: String? {
        get { trace?.outboundTracestate }
        set { updateTrace { $0.outboundTracestate = newValue } }
    }

    /// The job's trace context strings, kept in one optional: most jobs have none, and a job is
    /// copied several times between its claim and its result, so five separate optional strings
    /// were five reference counts to touch on every copy (seen in a profile of the no-op drain).
    private struct TraceFields: Sendable, Equatable {
        var traceparent: String?
        var tracestate: String?
        var previousAttemptTraceparent: String?
        var outboundTraceparent: String?
        var outboundTracestate: String?
    }
    private var trace: TraceFields?

    private mutating func updateTrace(_ change: (inout TraceFields) -> Void) {
        var fields = trace ?? TraceFields()
        change(&fields)
        trace = fields == TraceFields() ? nil : fields
    }

    /// Set by the worker on the job of a breaker's half-open probe, which is sent although
    /// its destination is held back (it is how the destination gets tested). Not stored.
    public var isProbe = false

    /// Set by the claimer on a job it leased through the gated claim (`courier.claim_gated`):
    /// its destination has a traffic policy, so its time due before the claim includes waiting
    /// for a slot, a token or the retry budget. Not stored.
    public var claimedThroughGate = false

    /// The signing secret that applies: the job's own wins over its destination's default.
    public var effectiveSigningSecret: String? { signingSecret ?? destinationSigningSecret }

    public init(id: Int64, kind: String = "http", queue: String = "default", attempt: Int, maxAttempts: Int = 5,
                deadline: Date? = nil, destination: String, method: String = "POST", url: String?,
                headersJSON: String = "{}", body: String? = nil, timeoutMilliseconds: Int = 30_000,
                expectContentType: String? = nil, idempotencyKey: String? = nil, argsJSON: String? = nil,
                lastDelayMilliseconds: Int64? = nil, cancelRequested: Bool = false, createdAt: Date? = nil,
                signingSecret: String? = nil, destinationSigningSecret: String? = nil, lease: Int64? = nil,
                refusals: Int = 0, refusedSince: Date? = nil, traceparent: String? = nil, tracestate: String? = nil,
                runAt: Date? = nil, previousAttemptTraceparent: String? = nil, heldMilliseconds: Int64? = nil) {
        // A job built by hand (tests, tools) without a token gets its attempt number as one.
        self.lease = lease ?? Int64(attempt)
        self.createdAt = createdAt
        self.id = id
        self.kind = kind
        self.queue = queue
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.deadline = deadline
        self.destination = destination
        self.method = method
        self.url = url
        self.headersJSON = headersJSON
        self.headers = StoredHeader.headers(fromJSON: headersJSON)
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.expectContentType = expectContentType
        self.idempotencyKey = idempotencyKey
        self.argsJSON = argsJSON
        self.lastDelayMilliseconds = lastDelayMilliseconds
        self.cancelRequested = cancelRequested
        self.signingSecret = signingSecret
        self.destinationSigningSecret = destinationSigningSecret
        self.refusals = refusals
        self.refusedSince = refusedSince
        self.trace = traceparent == nil && tracestate == nil && previousAttemptTraceparent == nil ? nil
            : TraceFields(traceparent: traceparent, tracestate: tracestate, previousAttemptTraceparent: previousAttemptTraceparent)
        self.runAt = runAt
        self.heldMilliseconds = heldMilliseconds
    }

    /// A claim's statement around `claimed`, a statement whose rows are claimed
    /// `courier.jobs` rows (plus any columns `extraColumns` names through `j`), with each
    /// row's destination's signing secret read at claim time (see ``columns``).
    static func claimStatement(claimed: String, extraColumns: String = "", orderBy: String = "") -> String {
        """
        select \(columns)\(extraColumns)
        from (\(claimed)) j\(orderBy)
        """
    }

    /// The columns of a claimed job, read from the claimed row `j`. The destination's default
    /// signing secret is looked up per row through `courier.destinations`' primary key
    /// (``SigningSecretChoice/destinationDefaultSQL(for:)``, as `jobctl` shows it; a
    /// destination without a row has none).
    ///
    /// Why per row, not a join: a claim's plan is set up anew on every call, and the join's
    /// (the distinct destinations, a bitmap scan of them, a hash join) cost more to set up
    /// than the lookups of a usual claim: one job on pickup, tens when busy. It took 15% of
    /// the claiming backend's time in a pickup profile; with per-row lookups pickup p50 went
    /// 1.14 → 1.07 ms and the HTTP drain stayed level (bench/notes.md, "Pickup against
    /// 08fec26, split into schema and worker"). A plain join was worse again: planned as a
    /// hash join over the whole of `courier.destinations`, 1 ms for a one-job claim with
    /// 10,000 destinations.
    static let columns = """
        j.id, j.kind, j.queue, j.attempt, j.max_attempts, j.deadline, j.destination, j.method, j.url, j.headers::text,
        j.body, j.timeout_ms, j.expect_content_type, j.idempotency_key, j.args::text, j.last_delay_ms,
        j.cancel_requested_at is not null, j.created_at, j.signing_secret,
        \(SigningSecretChoice.destinationDefaultSQL(for: "j.destination")), j.lease_seq,
        \(refusalRunSQL), j.traceparent, j.tracestate, j.run_at, j.errors -> -1 ->> 'traceparent', j.held_ms
        """

    /// The job's current run of refusals: its count and start, or 0 and NULL when an attempt
    /// was made since the last refusal (the claim has counted this one already, hence the - 1).
    /// The same rule as `courier.refuse_jobs`'s.
    static let refusalRunSQL = """
        case when j.refused_attempt = j.attempt - 1 then j.refusals else 0 end, \
        case when j.refused_attempt = j.attempt - 1 then j.refused_since end
        """

    init(row: PostgresRow) throws {
        self.init(
            id: try row.decode(0, as: Int64.self), kind: try row.decode(1, as: String.self),
            queue: try row.decode(2, as: String.self), attempt: try row.decode(3, as: Int.self),
            maxAttempts: try row.decode(4, as: Int.self), deadline: try row.decode(5, as: Date?.self),
            destination: try row.decode(6, as: String.self), method: try row.decode(7, as: String.self),
            url: try row.decode(8, as: String?.self), headersJSON: try row.decode(9, as: String.self),
            body: try row.decode(10, as: String?.self), timeoutMilliseconds: try row.decode(11, as: Int.self),
            expectContentType: try row.decode(12, as: String?.self), idempotencyKey: try row.decode(13, as: String?.self),
            argsJSON: try row.decode(14, as: String?.self), lastDelayMilliseconds: try row.decode(15, as: Int64?.self),
            cancelRequested: try row.decode(16, as: Bool.self), createdAt: try row.decode(17, as: Date?.self),
            signingSecret: try row.decode(18, as: String?.self), destinationSigningSecret: try row.decode(19, as: String?.self),
            lease: try row.decode(20, as: Int64.self),
            refusals: try row.decode(21, as: Int.self), refusedSince: try row.decode(22, as: Date?.self),
            traceparent: try row.decode(23, as: String?.self), tracestate: try row.decode(24, as: String?.self),
            runAt: try row.decode(25, as: Date?.self), previousAttemptTraceparent: try row.decode(26, as: String?.self),
            heldMilliseconds: try row.decode(27, as: Int64?.self)
        )
    }
}

/// One header stored with a job: a value, or the name of a secret the worker resolves.
public struct StoredHeader: Sendable, Equatable {
    public var name: String
    public var value: EnqueueRequest.HeaderValue

    public init(name: String, value: EnqueueRequest.HeaderValue) {
        self.name = name
        self.value = value
    }

    /// The headers of a stored headers object (`courier.jobs.headers`, written by
    /// `EnqueueRequest.headersJSON` or `courier.enqueue`), in name order. An entry of any
    /// other shape is skipped: the table's check refuses such objects.
    static func headers(fromJSON json: String) -> [StoredHeader] {
        // Most jobs store no headers: no parser for them.
        guard json != "{}",
              let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return [] }
        return object.keys.sorted().compactMap { name in
            if let value = object[name] as? String { return StoredHeader(name: name, value: .literal(value)) }
            if let reference = object[name] as? [String: Any], let secret = reference["secret"] as? String {
                return StoredHeader(name: name, value: .secret(name: secret))
            }
            return nil
        }
    }
}
