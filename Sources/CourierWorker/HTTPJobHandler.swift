import CourierCore
import CourierHTTP
import CourierStore
import Foundation

/// The built-in `http` kind: sends the job's request with its idempotency key and
/// classifies what came back.
public struct HTTPJobHandler: JobHandler {
    let transport: any HTTPTransport
    let secrets: SecretResolver

    public init(transport: any HTTPTransport, secrets: SecretResolver) {
        self.transport = transport
        self.secrets = secrets
    }

    public func perform(_ job: ClaimedJob) async -> Classification {
        let request: HTTPRequest
        switch buildRequest(job) {
        case .success(let built): request = built
        case .failure(let refusal):
            let outcome: TransportOutcome = refusal.isLocal ? .refusedByConfiguration(refusal.message) : .blocked(refusal.message)
            return OutcomeClassifier.classify(outcome, expectContentType: nil, now: Date())
        }
        let outcome = await transport.send(request)
        var classification = OutcomeClassifier.classify(outcome, expectContentType: job.expectContentType, now: Date())
        // A server may echo credentials back (e.g. in a body excerpt): keep them out of logs and stored errors.
        let referenced = secretHeaderNames(job)
        classification.message = Self.scrub(classification.message, secrets: request.headers.compactMap { header in
            Redaction.isSensitiveHeader(header.name) || referenced.contains(header.name) ? header.value : nil
        })
        return classification
    }

    /// Replaces every occurrence of the given values (of 4 or more characters) by the redaction placeholder.
    static func scrub(_ text: String, secrets: [String]) -> String {
        var result = text
        for secret in secrets.sorted(by: { $0.count > $1.count }) where secret.count >= 4 {
            result = result.replacingOccurrences(of: secret, with: Redaction.placeholder)
            // Also the parts of "Bearer xyz" or "a=b; c=d" that could be echoed alone.
            for part in secret.split(whereSeparator: { $0 == " " || $0 == ";" || $0 == "=" || $0 == "," }) where part.count >= 8 {
                result = result.replacingOccurrences(of: part, with: Redaction.placeholder)
            }
        }
        return result
    }

    /// Names of the headers whose values come from `{"secret": NAME}` references.
    func secretHeaderNames(_ job: ClaimedJob) -> Set<String> {
        let stored = (try? JSONSerialization.jsonObject(with: Data(job.headersJSON.utf8))) as? [String: Any] ?? [:]
        return Set(stored.compactMap { name, value in (value as? [String: Any])?["secret"] != nil ? name : nil })
    }

    /// Why a request was not built; `isLocal` when the cause is this worker's configuration (a secret it cannot resolve).
    struct Refusal: Error { var message: String; var isLocal = false }

    /// The request for one attempt: stored headers with secrets resolved, the
    /// `Idempotency-Key` header, and a content type for bodies that have none.
    func buildRequest(_ job: ClaimedJob) -> Result<HTTPRequest, Refusal> {
        guard let url = job.url else { return .failure(Refusal(message: "the job has no url")) }
        var headers: [HTTPHeader] = []
        let stored = (try? JSONSerialization.jsonObject(with: Data(job.headersJSON.utf8))) as? [String: Any] ?? [:]
        for name in stored.keys.sorted() {
            if let value = stored[name] as? String {
                headers.append(HTTPHeader(name: name, value: value))
            } else if let reference = stored[name] as? [String: Any], let secretName = reference["secret"] as? String {
                guard let value = secrets.resolve(secretName) else {
                    return .failure(Refusal(message: "secret '\(secretName)' for header \(name) is not set (\(SecretResolver.environmentName(for: secretName)) or the secrets directory)", isLocal: true))
                }
                headers.append(HTTPHeader(name: name, value: value))
            }
        }
        func has(_ name: String) -> Bool { headers.contains { $0.name.caseInsensitiveCompare(name) == .orderedSame } }
        if let key = job.idempotencyKey, !has("Idempotency-Key") {
            headers.append(HTTPHeader(name: "Idempotency-Key", value: key))
        }
        if let body = job.body, !has("Content-Type") {
            let looksLikeJSON = (try? JSONSerialization.jsonObject(with: Data(body.utf8), options: [.fragmentsAllowed])) != nil
            headers.append(HTTPHeader(name: "Content-Type", value: looksLikeJSON ? "application/json" : "text/plain; charset=utf-8"))
        }
        return .success(HTTPRequest(
            method: job.method, url: url, headers: headers, body: job.body.map { Array($0.utf8) },
            timeout: .milliseconds(job.timeoutMilliseconds), connectTimeout: .milliseconds(min(job.timeoutMilliseconds, 10_000))
        ))
    }
}
