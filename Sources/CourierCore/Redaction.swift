/// Which values are secret, and how to hide them: the one list of sensitive names,
/// used for header names and for URL query parameter names alike.
///
/// Sensitive: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `sig`,
/// and any name containing `token`, `secret`, `key`, `password`, `passwd`,
/// `signature`, `credential` or `auth` (case-insensitive) — except `Idempotency-Key`,
/// which is an identifier the receiver needs to see and is shown as is.
public enum Redaction {
    /// What a redacted value is replaced with.
    public static let placeholder = "[REDACTED]"

    private static let exactNames: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie", "sig"]
    private static let fragments = ["token", "secret", "key", "password", "passwd", "signature", "credential", "auth"]
    private static let exemptNames: Set<String> = ["idempotency-key"]

    /// Whether values named `name` (a header, or a URL query parameter) must never be shown.
    public static func isSensitiveName(_ name: String) -> Bool {
        let lower = name.trimmingWhitespace().asciiLowercased
        if exemptNames.contains(lower) { return false }
        if exactNames.contains(lower) { return true }
        return fragments.contains { lower.contains($0) }
    }

    /// Whether values of header `name` must never be shown.
    public static func isSensitiveHeader(_ name: String) -> Bool { isSensitiveName(name) }

    /// The headers with every sensitive value replaced by ``placeholder``.
    public static func redact(_ headers: [HTTPHeader]) -> [HTTPHeader] {
        headers.map { isSensitiveHeader($0.name) ? HTTPHeader(name: $0.name, value: placeholder) : $0 }
    }

    /// The value to show for header `name`: `value`, or ``placeholder`` if sensitive.
    public static func displayValue(name: String, value: String) -> String {
        isSensitiveHeader(name) ? placeholder : value
    }

    /// The URL with the value of every query parameter whose name is sensitive
    /// (`?api_key=…`, `token=`, `signature=`, …) replaced by ``placeholder``. The
    /// fragment and everything else are kept; a URL without a query is returned as is.
    public static func redactURL(_ url: String) -> String {
        guard let question = url.firstIndex(of: "?") else { return url }
        let hash = url[question...].firstIndex(of: "#") ?? url.endIndex
        let query = url[url.index(after: question)..<hash]
        var changed = false
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> Substring in
            guard let equals = part.firstIndex(of: "=") else { return part }
            let name = part[..<equals]
            // Names may be percent-encoded ("api%5Fkey"): judge the decoded form too.
            guard isSensitiveName(String(name)) || isSensitiveName(percentDecoded(name)) else { return part }
            changed = true
            return name + "=" + placeholder
        }
        guard changed else { return url }
        return String(url[...question]) + parts.joined(separator: "&") + String(url[hash...])
    }

    /// `bytes` with each secret removed, as it is or as a receiver may have transformed it
    /// (case, escapes, re-encoding; see ``SecretScrubber``, which this builds for one use).
    /// Works on raw bytes, so it must run before any excerpt is cut or escaped: a secret
    /// crossing the cut, or holding `"`, `\` or non-ASCII bytes, would survive a scrub of
    /// the escaped text.
    public static func scrub(_ bytes: [UInt8], secrets: [String]) -> [UInt8] {
        SecretScrubber(secrets: secrets).scrub(bytes)
    }

    /// The text with the same replacements as ``scrub(_:secrets:)``.
    public static func scrub(_ text: String, secrets: [String]) -> String {
        SecretScrubber(secrets: secrets).scrub(text)
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            if byte == UInt8(ascii: "%"), let high = bytes.next()?.hexDigit, let low = bytes.next()?.hexDigit {
                out.append(high << 4 | low)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
