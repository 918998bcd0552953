import CourierCore
import Foundation

extension EnqueueRequest {
    /// Checks every field against the same rules as `courier.enqueue` and the
    /// table's CHECK constraints, so bad input is refused before it reaches the
    /// database, with an error that names the field.
    /// - Parameter now: the reference time for `deadline` checks.
    public func validate(now: Date = Date()) throws(ValidationError) {
        // PostgreSQL text cannot hold NUL: refuse it here, naming the field, rather than let
        // it abort a whole COPY with an encoding error that names neither line nor field.
        for (field, value) in [("url", url), ("method", method), ("idempotency_key", customIdempotencyKey),
                               ("unique_key", uniqueKey), ("destination", destination),
                               ("expect_content_type", expectContentType), ("signing_secret", signingSecret)] {
            if let value, value.utf8.contains(0) {
                throw ValidationError(field: field, message: "contains a NUL character (\\u0000), which PostgreSQL text cannot hold")
            }
        }
        if url.utf8.count > 8192 { throw ValidationError(field: "url", message: "is longer than 8192 characters") }
        _ = try Destination.derive(fromURL: url)
        if !Self.isMethodToken(method.asciiUppercased) {
            throw ValidationError(field: "method", message: "must be an HTTP method token such as GET or POST, got '\(method)'")
        }
        try validateHeaders()
        if let body {
            if body.utf8.count > 16_777_216 { throw ValidationError(field: "body", message: "is larger than 16 MiB") }
            if body.utf8.contains(0) {
                throw ValidationError(field: "body", message: "contains a NUL character (\\u0000), which PostgreSQL text cannot hold")
            }
        }
        if !QueueName.isValid(queue) {
            throw ValidationError(field: "queue", message: "must be \(QueueName.rule)")
        }
        if !(-32768...32767).contains(priority) {
            throw ValidationError(field: "priority", message: "must be between -32768 and 32767")
        }
        if !(1...1000).contains(maxAttempts) {
            throw ValidationError(field: "max_attempts", message: "must be between 1 and 1000")
        }
        // The same range as every other door (flags, NDJSON): never `infinity` or year 10000.
        if let runAt { _ = try Timestamp.checked(runAt, field: "run_at") }
        if let deadline { _ = try Timestamp.checked(deadline, field: "deadline") }
        if let deadline, deadline <= max(now, runAt ?? now) {
            throw ValidationError(field: "deadline", message: "must be later than now and than run_at")
        }
        if case .custom(let key) = idempotencyKey, !(1...255).contains(key.unicodeScalars.count) {
            throw ValidationError(field: "idempotency_key", message: "must be 1 to 255 characters")
        }
        // It is sent as a header (Idempotency-Key, webhook-id): no CR, LF or other control character.
        if case .custom(let key) = idempotencyKey, key.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw ValidationError(field: "idempotency_key", message: "must not contain control characters (CR, LF, tab, ...)")
        }
        if let uniqueKey, !(1...255).contains(uniqueKey.unicodeScalars.count) {
            throw ValidationError(field: "unique_key", message: "must be 1 to 255 characters")
        }
        if let destination, !(1...300).contains(destination.unicodeScalars.count) {
            throw ValidationError(field: "destination", message: "must be 1 to 300 characters")
        }
        if !(1...3_600_000).contains(timeoutMilliseconds) {
            throw ValidationError(field: "timeout_ms", message: "must be between 1 and 3600000")
        }
        if let expectContentType, !Self.isMediaType(expectContentType) {
            throw ValidationError(field: "expect_content_type", message: "must be a media type such as application/json")
        }
        if let signingSecret, !Self.isSecretName(signingSecret) {
            throw ValidationError(field: "signing_secret", message: Self.secretNameRule)
        }
        if let traceparent { _ = try TraceContext.parse(traceparent: traceparent) }
        if let tracestate {
            if traceparent == nil { throw ValidationError(field: "tracestate", message: "needs a traceparent") }
            try TraceContext.validate(tracestate: tracestate)
        }
        if let fairnessKey { try FairnessKey.validate(fairnessKey) }
    }

    private var customIdempotencyKey: String? {
        if case .custom(let key) = idempotencyKey { return key }
        return nil
    }

    /// What a secret name may be, for messages (the rule of `courier.is_secret_name`).
    public static let secretNameRule = "must be a secret name: 1 to 128 letters, digits, _ . -"

    /// Whether `name` is a valid secret name (header secret references, signing secrets).
    public static func isValidSecretName(_ name: String) -> Bool { isSecretName(name) }

    /// The header rules of the `courier.header_map` domain (``HeaderRules``). The count
    /// is checked first, so every later step works on at most ``HeaderRules/maximumCount``
    /// headers; duplicates are found with a set, not by comparing pairs.
    func validateHeaders() throws(ValidationError) {
        if let problem = HeaderRules.limitProblem(headers.lazy.map { header in
            switch header.value {
            case .literal(let value): (header.name.utf8.count, value.utf8.count)
            case .secret(let name): (header.name.utf8.count, name.utf8.count)
            }
        }) {
            throw ValidationError(field: "headers", message: problem)
        }
        var seen = Set<String>(minimumCapacity: headers.count)
        for header in headers {
            if !Self.isHeaderName(header.name) {
                throw ValidationError(field: "headers", message: "\(Quoting.quote(header.name)) is not a valid header name")
            }
            if !seen.insert(header.name.asciiLowercased).inserted {
                throw ValidationError(field: "headers", message: "header \(Quoting.quote(header.name)) is given twice")
            }
            switch header.value {
            case .literal(let value):
                if !value.utf8.allSatisfy(HeaderRules.isAllowedValueByte) {
                    throw ValidationError(field: "headers", message: "the value of \(Quoting.quote(header.name)) contains a control character")
                }
            case .secret(let name):
                if !Self.isSecretName(name) {
                    throw ValidationError(field: "headers", message: "the secret name for \(Quoting.quote(header.name)) must be 1 to 128 letters, digits, _ . -")
                }
            }
        }
    }

    // The character classes of the SQL domains' patterns, checked byte by byte: a regular
    // expression per field was most of the validation time of a bulk load (bench/notes.md,
    // "Where the time goes").

    /// `^[A-Z][A-Z0-9_-]{0,19}$`
    static func isMethodToken(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard let first = utf8.first, (1...20).contains(utf8.count), isUpper(first) else { return false }
        return utf8.allSatisfy { isUpper($0) || isDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// An RFC 9110 token: `^[!#$%&'*+.^_`|~0-9A-Za-z-]+$`
    static func isHeaderName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { isLetterOrDigit($0) || "!#$%&'*+.^_`|~-".utf8.contains($0) }
    }

    /// `^[A-Za-z0-9_.-]{1,128}$`
    static func isSecretName(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count) && text.utf8.allSatisfy { isLetterOrDigit($0) || "_.-".utf8.contains($0) }
    }

    /// `^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+*-]+$`
    static func isMediaType(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return false }
        return parts[0].allSatisfy { isLetterOrDigit($0) || "!#$&^_.+-".utf8.contains($0) }
            && parts[1].allSatisfy { isLetterOrDigit($0) || "!#$&^_.+*-".utf8.contains($0) }
    }

    /// ASCII case-insensitive equality of header names (which are ASCII tokens).
    static func sameHeaderName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
        }
    }

    private static func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        isUpper(byte) || isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
    }
}
