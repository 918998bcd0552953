/// Which header values are secret, and how to hide them.
///
/// Sensitive: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
/// `webhook-signature` (a signature made with a secret), and any name containing `token`, `secret`, `key` or `password`
/// (case-insensitive) — except `Idempotency-Key`, which is an identifier the
/// receiver needs to see and is shown as is.
public enum Redaction {
    /// What a redacted value is replaced with.
    public static let placeholder = "[REDACTED]"

    private static let exactNames: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie",
                                                  "webhook-signature"]
    private static let fragments = ["token", "secret", "key", "password"]
    private static let exemptNames: Set<String> = ["idempotency-key"]

    /// Whether values of header `name` must never be shown.
    public static func isSensitiveHeader(_ name: String) -> Bool {
        let lower = name.trimmingWhitespace().asciiLowercased
        if exemptNames.contains(lower) { return false }
        if exactNames.contains(lower) { return true }
        return fragments.contains { lower.contains($0) }
    }

    /// The headers with every sensitive value replaced by ``placeholder``.
    public static func redact(_ headers: [HTTPHeader]) -> [HTTPHeader] {
        headers.map { isSensitiveHeader($0.name) ? HTTPHeader(name: $0.name, value: placeholder) : $0 }
    }

    /// The value to show for header `name`: `value`, or ``placeholder`` if sensitive.
    public static func displayValue(name: String, value: String) -> String {
        isSensitiveHeader(name) ? placeholder : value
    }
}
