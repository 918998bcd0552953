import CourierCore
import CourierSigning
import CourierStore
import Foundation

/// The Standard Webhooks headers of one attempt of a job that has a signing secret
/// (its own, else its destination's default). Pure apart from the resolver it is given.
enum WebhookSigning {
    /// The headers to add, and the values in them that must never be shown.
    struct Signed {
        var headers: [HTTPHeader]
        /// The secret's value and the signatures.
        var secretValues: [String]
    }

    /// The `webhook-id` of a job: its idempotency key, so it is the same on every attempt
    /// and every replay; a job enqueued without a key gets `courier-job-<id>`, stable
    /// across its attempts (a replay is a new job, with a new id).
    static func webhookID(for job: ClaimedJob) -> String {
        job.idempotencyKey ?? "courier-job-\(job.id)"
    }

    /// The three headers to add, nil when the job is not signed, or the reason nothing may
    /// be sent, naming the secret, never its value. The secret is looked up as header
    /// secrets are (`SecretResolver.resolve(_:for:)`, so its destination binding applies),
    /// and refused the same way; a malformed value is this worker's configuration, as a
    /// missing one is.
    /// - Parameters:
    ///   - url: the URL the request goes to (the binding is checked against it).
    ///   - body: the exact bytes the request will carry.
    ///   - now: the attempt's time; `webhook-timestamp` is its unix seconds.
    ///   - resolve: the worker's secret lookup.
    static func headers(for job: ClaimedJob, url: String, body: [UInt8], now: Date,
                        resolve: (String, String) -> Result<String, SecretResolver.Refusal>)
        -> Result<Signed, HTTPJobHandler.Refusal>? {
        guard let name = job.effectiveSigningSecret else { return nil }
        let context = "signing secret (\(job.signingSecret != nil ? "the job's" : "its destination's default"))"
        let value: String
        switch resolve(name, url) {
        case .success(let resolved): value = resolved
        case .failure(let refusal): return .failure(HTTPJobHandler.refusal(refusal, context: context))
        }
        let secret: WebhookSecret
        do throws(WebhookSigningError) {
            secret = try WebhookSecret(parsing: value, name: name)
        } catch {
            return .failure(HTTPJobHandler.Refusal(message: "\(context): \(error)", isLocal: true))
        }
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        let headers = StandardWebhookSigner.headers(id: webhookID(for: job), timestamp: timestamp, body: body, secret: secret)
        let signatures = headers.last.map { $0.value.split(separator: " ").map(String.init) } ?? []
        return .success(Signed(headers: headers, secretValues: [value] + signatures))
    }
}
