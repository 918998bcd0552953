import CourierCore
import Foundation

extension EnqueueRequest {
    /// Checks every field against the same rules as `courier.enqueue` and the
    /// table's CHECK constraints, so bad input is refused before it reaches the
    /// database, with an error that names the field.
    /// - Parameter now: the reference time for `deadline` checks.
    public func validate(now: Date = Date()) throws(ValidationError) {
        if url.utf8.count > 8192 { throw ValidationError(field: "url", message: "is longer than 8192 characters") }
        _ = try Destination.derive(fromURL: url)
        let upperMethod = method.uppercased()
        if !Self.matches(upperMethod, #"^[A-Z][A-Z0-9_-]{0,19}$"#) {
            throw ValidationError(field: "method", message: "must be an HTTP method token such as GET or POST, got '\(method)'")
        }
        var seen = Set<String>()
        for header in headers {
            if !Self.matches(header.name, #"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"#) {
                throw ValidationError(field: "headers", message: "'\(header.name)' is not a valid header name")
            }
            if !seen.insert(header.name.lowercased()).inserted {
                throw ValidationError(field: "headers", message: "header '\(header.name)' is given twice")
            }
            switch header.value {
            case .literal(let value):
                if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                    throw ValidationError(field: "headers", message: "the value of '\(header.name)' contains a line break")
                }
            case .secret(let name):
                if !Self.matches(name, #"^[A-Za-z0-9_.-]{1,128}$"#) {
                    throw ValidationError(field: "headers", message: "the secret name for '\(header.name)' must be letters, digits, _ . -")
                }
            }
        }
        if let body, body.utf8.count > 16_777_216 { throw ValidationError(field: "body", message: "is larger than 16 MiB") }
        if !Self.matches(queue, #"^[A-Za-z0-9_.:-]{1,64}$"#) {
            throw ValidationError(field: "queue", message: "must be 1 to 64 characters of letters, digits, _ . : -")
        }
        if !(-32768...32767).contains(priority) {
            throw ValidationError(field: "priority", message: "must be between -32768 and 32767")
        }
        if !(1...1000).contains(maxAttempts) {
            throw ValidationError(field: "max_attempts", message: "must be between 1 and 1000")
        }
        if let deadline, deadline <= max(now, runAt ?? now) {
            throw ValidationError(field: "deadline", message: "must be later than now and than run_at")
        }
        if case .custom(let key) = idempotencyKey, !(1...255).contains(key.count) {
            throw ValidationError(field: "idempotency_key", message: "must be 1 to 255 characters")
        }
        if let uniqueKey, !(1...255).contains(uniqueKey.count) {
            throw ValidationError(field: "unique_key", message: "must be 1 to 255 characters")
        }
        if let destination, !(1...300).contains(destination.count) {
            throw ValidationError(field: "destination", message: "must be 1 to 300 characters")
        }
        if !(1...3_600_000).contains(timeoutMilliseconds) {
            throw ValidationError(field: "timeout_ms", message: "must be between 1 and 3600000")
        }
        if let expectContentType, !Self.matches(expectContentType, #"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+*-]+$"#) {
            throw ValidationError(field: "expect_content_type", message: "must be a media type such as application/json")
        }
    }

    /// Whether `text` matches `pattern`. The compiled expression is cached per pattern:
    /// `String.range(of:options: .regularExpression)` compiles it on every call, which was
    /// a third of the time `jobctl enqueue --ndjson` spent parsing (see bench/RESULTS.md).
    private static func matches(_ text: String, _ pattern: String) -> Bool {
        guard let regex = compiledPatterns.expression(for: pattern) else {
            return text.range(of: pattern, options: .regularExpression) != nil
        }
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    private static let compiledPatterns = CompiledPatterns()
}

/// Compiled regular expressions by pattern, shared by all threads.
private final class CompiledPatterns: @unchecked Sendable {
    private let lock = NSLock()
    private var expressions: [String: NSRegularExpression] = [:]

    func expression(for pattern: String) -> NSRegularExpression? {
        lock.withLock {
            if let cached = expressions[pattern] { return cached }
            guard let compiled = try? NSRegularExpression(pattern: pattern) else { return nil }
            expressions[pattern] = compiled
            return compiled
        }
    }
}
