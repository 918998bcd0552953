import CCrypto
import CourierCore
import Foundation

/// Signs requests as the Standard Webhooks specification says
/// (standard-webhooks/standard-webhooks, `spec/standard-webhooks.md`): three headers,
/// `webhook-id`, `webhook-timestamp` and `webhook-signature`, the last holding
/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per key, separated by spaces.
/// Pure: the caller supplies the id, the time and the exact body bytes sent.
public enum StandardWebhookSigner {
    /// The header names, as the specification writes them.
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"
    /// Every header this signer sets.
    public static let headerNames = [idHeader, timestampHeader, signatureHeader]

    /// The `webhook-signature` value: one `v1,<base64>` per key of `secret`, space-separated.
    public static func signature(id: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> String {
        var content = Array("\(id).\(timestamp).".utf8)
        content.append(contentsOf: body)
        return secret.keys.map { "v1," + Data(hmacSHA256(key: $0, data: content)).base64EncodedString() }
            .joined(separator: " ")
    }

    /// The three headers for one attempt.
    public static func headers(id: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> [HTTPHeader] {
        [
            HTTPHeader(name: idHeader, value: id),
            HTTPHeader(name: timestampHeader, value: String(timestamp)),
            HTTPHeader(name: signatureHeader, value: signature(id: id, timestamp: timestamp, body: body, secret: secret)),
        ]
    }

    /// HMAC-SHA256 through libcrypto.
    static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    courier_hmac_sha256(k.baseAddress, k.count, d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        // HMAC with SHA-256 fails only if libcrypto cannot allocate: nothing sensible to send then.
        precondition(ok == 1, "libcrypto HMAC-SHA256 failed")
        return out
    }
}

