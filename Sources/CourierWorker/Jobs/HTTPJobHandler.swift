import CourierCore
import CourierHTTP
import CourierStore
import Foundation

/// The built-in `http` kind: sends the job's request with its idempotency key (and,
/// for a job with a signing secret, the Standard Webhooks signature headers) and
/// classifies what came back.
public struct HTTPJobHandler: JobHandler {
    let transport: any HTTPTransport
    let secrets: SecretResolver
    /// The clock of `webhook-timestamp`.
    let now: @Sendable () -> Date
    /// The fleet's held-back destinations, asked just before each request is written (the
    /// worker sets it); nil sends every request it built.
    var heldBack: HeldBackDestinations?

    public init(transport: any HTTPTransport, secrets: SecretResolver, now: @escaping @Sendable () -> Date = { Date() }) {
        self.transport = transport
        self.secrets = secrets
        self.now = now
    }

    public func perform(_ job: ClaimedJob) async -> Classification {
        // Only the send is asynchronous, and what it needs afterwards is one reference: the
        // task keeps this frame for the whole request (see `Worker.execute`).
        switch prepare(job) {
        case .refused(let classification):
            return classification
        case .ready(let sending):
            return classify(await transport.send(sending.built.request), sending)
        }
    }

    /// A request ready to send, and what judging its outcome needs, behind one reference.
    final class Sending: Sendable {
        let built: BuiltRequest
        let expectContentType: String?

        init(built: BuiltRequest, expectContentType: String?) {
            self.built = built
            self.expectContentType = expectContentType
        }
    }

    enum Preparation {
        case ready(Sending)
        case refused(Classification)
    }

    /// The request for `job`, or the classification of why none could be built.
    @inline(never)
    func prepare(_ job: ClaimedJob) -> Preparation {
        switch buildRequest(job) {
        case .success(var built):
            if !job.isProbe, let heldBack { built.request.mayStillSend = heldBack.sendCheck(for: job.destination) }
            return .ready(Sending(built: built, expectContentType: job.expectContentType))
        case .failure(let refusal):
            let outcome: TransportOutcome = refusal.isLocal ? .refusedByConfiguration(refusal.message) : .blocked(refusal.message)
            return .refused(OutcomeClassifier.classify(outcome, expectContentType: nil, now: Date()))
        }
    }

    /// Judges the outcome, with the request's secrets removed from everything that is kept of it.
    @inline(never)
    func classify(_ outcome: TransportOutcome, _ sending: Sending) -> Classification {
        // A server may echo credentials back (in a body excerpt, a header): remove them from
        // the raw bytes before anything is cut, escaped, logged or stored.
        // One index of the secrets for every piece (body, header values, message).
        let scrubber = SecretScrubber(secrets: sending.built.secretValues)
        let scrubbed = Self.scrub(outcome, with: scrubber)
        var classification = OutcomeClassifier.classify(scrubbed, expectContentType: sending.expectContentType, now: Date())
        classification.message = scrubber.scrub(classification.message)
        return classification
    }

    /// The outcome with every secret value, echoed as it is or transformed, removed from
    /// the response's body and header values.
    static func scrub(_ outcome: TransportOutcome, with scrubber: SecretScrubber) -> TransportOutcome {
        guard case .response(var response) = outcome, !scrubber.isEmpty else { return outcome }
        response.bodyPrefix = scrubber.scrub(response.bodyPrefix)
        response.headers = response.headers.map {
            HTTPHeader(name: $0.name, value: scrubber.scrub($0.value))
        }
        return .response(response)
    }

    /// One attempt's request, and the values in it that must never be shown: every
    /// resolved secret and the value of every sensitive header.
    struct BuiltRequest: Sendable {
        var request: HTTPRequest
        var secretValues: [String]
    }

    /// Why a request was not built; `isLocal` when the cause is this worker's configuration (a secret it cannot resolve).
    struct Refusal: Error { var message: String; var isLocal = false }

    /// A secret the resolver would not give out, as a refusal: one rule for header and
    /// signing secrets. A secret this worker lacks, cannot read the binding of, or finds in
    /// both the environment and the secrets directory is its configuration's fault (handed
    /// back); a secret not bound to this destination is the job's (permanent).
    static func refusal(_ refusal: SecretResolver.Refusal, context: String) -> Refusal {
        let isLocal: Bool
        switch refusal {
        case .missing, .badBinding, .ambiguous: isLocal = true
        case .notBound, .badURL: isLocal = false
        }
        return Refusal(message: "\(context): \(refusal)", isLocal: isLocal)
    }

    /// The request for one attempt: stored headers with secrets resolved (each only for a
    /// destination it is bound to), the `Idempotency-Key` header, a content type for
    /// bodies that have none, and the signature headers of a job with a signing secret.
    func buildRequest(_ job: ClaimedJob) -> Result<BuiltRequest, Refusal> {
        guard let url = job.url else { return .failure(Refusal(message: "the job has no url")) }
        var headers: [HTTPHeader] = []
        var secretValues: [String] = []
        for header in job.headers {
            switch header.value {
            case .literal(let value):
                headers.append(HTTPHeader(name: header.name, value: value))
                if Redaction.isSensitiveHeader(header.name) { secretValues.append(value) }
            case .secret(let secretName):
                switch secrets.resolve(secretName, for: url) {
                case .success(let value):
                    headers.append(HTTPHeader(name: header.name, value: value))
                    secretValues.append(value)
                case .failure(let refusal):
                    return .failure(Self.refusal(refusal, context: "header \(header.name)"))
                }
            }
        }
        // Resolved secrets count too: the stored limit bounds names and secret names only.
        if let problem = HeaderRules.limitProblem(headers.lazy.map { ($0.name.utf8.count, $0.value.utf8.count) }) {
            return .failure(Refusal(message: "headers: \(problem) once secrets are resolved"))
        }
        func has(_ name: String) -> Bool { headers.contains { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        if let key = job.idempotencyKey, !has("Idempotency-Key") {
            headers.append(HTTPHeader(name: "Idempotency-Key", value: key))
        }
        // Trace context, where the destination opted in (the worker sets these): it replaces any
        // stored header of the same names.
        if let traceparent = job.outboundTraceparent {
            headers.removeAll {
                $0.name.caseInsensitiveCompare("traceparent") == .orderedSame || $0.name.caseInsensitiveCompare("tracestate") == .orderedSame
            }
            headers.append(HTTPHeader(name: "traceparent", value: traceparent))
            if let state = job.outboundTracestate, !state.isEmpty { headers.append(HTTPHeader(name: "tracestate", value: state)) }
        }
        if let body = job.body, !has("Content-Type") {
            headers.append(HTTPHeader(name: "Content-Type",
                                      value: JSONSyntax.isValid(body) ? "application/json" : "text/plain; charset=utf-8"))
        }
        let body = job.body.map { Array($0.utf8) }
        // Signed over the exact bytes sent; the signature headers replace any stored ones of the same names.
        switch WebhookSigning.headers(for: job, url: url, body: body ?? [], now: now(), resolve: { secrets.resolve($0, for: $1) }) {
        case nil: break
        case .failure(let refusal)?: return .failure(refusal)
        case .success(let signed)?:
            headers.removeAll { stored in signed.headers.contains { $0.name.caseInsensitiveCompare(stored.name) == .orderedSame } }
            headers += signed.headers
            secretValues += signed.secretValues
        }
        return .success(BuiltRequest(request: HTTPRequest(
            method: job.method, url: url, headers: headers, body: body,
            timeout: .milliseconds(job.timeoutMilliseconds), connectTimeout: .milliseconds(min(job.timeoutMilliseconds, 10_000))
        ), secretValues: secretValues))
    }
}
