import CourierCore
import Foundation

extension EnqueueRequest {
    /// The keys an NDJSON line may carry: the parameters of `courier.enqueue`.
    public static let jsonFields: Set<String> = [
        "url", "method", "headers", "body", "queue", "priority", "run_at", "max_attempts", "deadline",
        "idempotency_key", "unique_key", "destination", "timeout_ms", "expect_content_type",
    ]

    /// Parses one NDJSON line. An absent `idempotency_key` means "generate one";
    /// `"idempotency_key": null` means "no key". `body` may be a string, or any other
    /// JSON value, which is sent as its JSON text. Unknown keys are refused so a typo
    /// cannot silently drop a setting. Errors name the field.
    public init(jsonLine: some StringProtocol) throws(ValidationError) {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(jsonLine.utf8), options: [.fragmentsAllowed]) as? [String: Any] else {
                throw ValidationError(field: "line", message: "must be a JSON object")
            }
            object = parsed
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError(field: "line", message: "is not valid JSON")
        }
        if let unknown = object.keys.filter({ !Self.jsonFields.contains($0) }).sorted().first {
            throw ValidationError(field: unknown, message: "is not a known field (expected one of: \(Self.jsonFields.sorted().joined(separator: ", ")))")
        }
        guard let url = object["url"] as? String else {
            throw ValidationError(field: "url", message: object["url"] == nil ? "is required" : "must be a string")
        }
        self.init(url: url)
        if let value = object["method"] { method = try Self.string(value, field: "method") }
        if let value = object["headers"] {
            guard let headerObject = value as? [String: Any] else {
                throw ValidationError(field: "headers", message: "must be a JSON object of name to value")
            }
            headers = try headerObject.keys.sorted().map { name throws(ValidationError) in
                let raw = headerObject[name]!
                if let text = raw as? String { return (name, .literal(text)) }
                if let reference = raw as? [String: Any], reference.count == 1, let secret = reference["secret"] as? String {
                    return (name, .secret(name: secret))
                }
                throw ValidationError(field: "headers", message: "the value of '\(name)' must be a string or {\"secret\": \"NAME\"}")
            }
        }
        if let value = object["body"], !(value is NSNull) {
            if let text = value as? String {
                body = text
            } else {
                // Any other JSON value is sent as its JSON text, exactly as written in the line.
                let bytes = Array(jsonLine.utf8)
                if let range = JSONMemberScanner.valueRange(of: "body", in: bytes) {
                    body = String(decoding: bytes[range], as: UTF8.self)
                } else if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) {
                    body = String(decoding: data, as: UTF8.self)
                }
            }
        }
        if let value = object["queue"] { queue = try Self.string(value, field: "queue") }
        if let value = object["priority"] { priority = try Self.integer(value, field: "priority") }
        if let value = object["run_at"], !(value is NSNull) { runAt = try Self.time(value, field: "run_at") }
        if let value = object["max_attempts"] { maxAttempts = try Self.integer(value, field: "max_attempts") }
        if let value = object["deadline"], !(value is NSNull) { deadline = try Self.time(value, field: "deadline") }
        if let value = object["idempotency_key"] {
            idempotencyKey = value is NSNull ? .none : .custom(try Self.string(value, field: "idempotency_key"))
        }
        if let value = object["unique_key"], !(value is NSNull) { uniqueKey = try Self.string(value, field: "unique_key") }
        if let value = object["destination"], !(value is NSNull) { destination = try Self.string(value, field: "destination") }
        if let value = object["timeout_ms"] { timeoutMilliseconds = try Self.integer(value, field: "timeout_ms") }
        if let value = object["expect_content_type"], !(value is NSNull) {
            expectContentType = try Self.string(value, field: "expect_content_type")
        }
    }

    private static func string(_ value: Any, field: String) throws(ValidationError) -> String {
        guard let text = value as? String else { throw ValidationError(field: field, message: "must be a string") }
        return text
    }

    private static func integer(_ value: Any, field: String) throws(ValidationError) -> Int {
        // `value is Bool` is true for every NSNumber 0 or 1 on Linux: compare with the boolean class instead.
        guard let number = value as? NSNumber, !isJSONBoolean(value), number.doubleValue == number.doubleValue.rounded(),
              abs(number.doubleValue) < 1e15 else {
            throw ValidationError(field: field, message: "must be a whole number")
        }
        return number.intValue
    }

    /// The class JSONSerialization uses for `true` and `false`.
    private static let booleanType = ObjectIdentifier(type(of: NSNumber(value: true) as Any))

    private static func isJSONBoolean(_ value: Any) -> Bool {
        type(of: value) == Bool.self || ObjectIdentifier(type(of: value)) == booleanType
    }

    private static func time(_ value: Any, field: String) throws(ValidationError) -> Date {
        guard let text = value as? String, let date = Timestamp.parse(text) else {
            throw ValidationError(field: field, message: "must be an ISO 8601 time such as 2026-11-29T20:00:00Z")
        }
        return date
    }
}

/// ISO 8601 times as users write them: `2026-11-29T20:00:00Z`, with fractional
/// seconds or a numeric offset.
public enum Timestamp {
    public static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = try? Date(trimmed, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(trimmed, strategy: Date.ISO8601FormatStyle())
    }

    /// `2026-11-29T20:00:00.123Z`, always UTC.
    public static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
