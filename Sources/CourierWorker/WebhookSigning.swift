import CourierCore
import CourierSigning
import CourierStore
import Foundation

/// The Standard Webhooks headers of one attempt of a job that has a signing secret
/// (its own, else its destination's default). Pure apart from the resolver it is given.
enum WebhookSigning {
    /// The `webhook-id` of a job: its idempotency key, so it is the same on every attempt
    /// and every replay; a job enqueued without a key gets `courier-job-<id>`, stable
    /// across its attempts (a replay is a new job, with a new id).
    static func webhookID(for job: ClaimedJob) -> String {
        job.idempotencyKey ?? "courier-job-\(job.id)"
    }

    /// The three headers to add, nil when the job is not signed, or the reason nothing may
    /// be sent (the secret is not set, or is malformed), naming the secret, never its value.
    /// - Parameters:
    ///   - body: the exact bytes the request will carry.
    ///   - now: the attempt's time; `webhook-timestamp` is its unix seconds.
    ///   - resolve: the worker's secret lookup (`SecretResolver.resolve`).
    static func headers(for job: ClaimedJob, body: [UInt8], now: Date,
                        resolve: (String) -> String?) -> Result<[HTTPHeader], HTTPJobHandler.Refusal>? {
        guard let name = job.effectiveSigningSecret else { return nil }
        let from = job.signingSecret != nil ? "the job's" : "its destination's default"
        guard let value = resolve(name) else {
            return .failure(HTTPJobHandler.Refusal(message: "signing secret '\(name)' (\(from)) is not set (\(SecretResolver.environmentName(for: name)) or the secrets directory)"))
        }
        let secret: WebhookSecret
        do throws(WebhookSigningError) {
            secret = try WebhookSecret(parsing: value, name: name)
        } catch {
            return .failure(HTTPJobHandler.Refusal(message: "\(error) (\(from))"))
        }
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        return .success(StandardWebhookSigner.headers(id: webhookID(for: job), timestamp: timestamp, body: body, secret: secret))
    }
}
