import CourierCore
import Foundation

extension EnqueueRequest {
    /// The keys an NDJSON line may carry, in the order of `courier.enqueue`'s parameters.
    public static let jsonFieldNames = [
        "url", "method", "headers", "body", "queue", "priority", "run_at", "max_attempts", "deadline",
        "idempotency_key", "unique_key", "destination", "timeout_ms", "expect_content_type", "signing_secret",
        "traceparent", "tracestate", "fairness_key",
    ]

    /// The keys an NDJSON line may carry: the parameters of `courier.enqueue`.
    public static let jsonFields = Set(jsonFieldNames)

    /// Parses one NDJSON line. An absent `idempotency_key` means "generate one";
    /// `"idempotency_key": null` means "no key". `body` may be a string, or any other
    /// JSON value, which is sent as its JSON text exactly as written. Unknown keys,
    /// and keys given twice, are refused so a typo cannot silently drop a setting.
    /// Errors name the field.
    public init(jsonLine: some StringProtocol) throws(ValidationError) {
        var text = String(jsonLine)
        let parsed = text.withUTF8 { bytes in
            Result { () throws(ValidationError) in try EnqueueRequest(jsonLineBytes: bytes) }
        }
        self = try parsed.get()
    }

    /// Parses one NDJSON line given as UTF-8 bytes (see ``init(jsonLine:)``).
    public init(jsonLineBytes bytes: UnsafeBufferPointer<UInt8>) throws(ValidationError) {
        var reader = JSONLineReader(bytes)
        let object: [(key: String, value: JSONLineReader.Value)]?
        do throws(JSONLineReader.SyntaxError) {
            object = try reader.readObjectMembers()
        } catch {
            throw ValidationError(field: "line", message: "is not valid JSON (at column \(error.offset + 1): expected \(error.expected))")
        }
        guard let members = object else { throw ValidationError(field: "line", message: "must be a JSON object") }
        var seen = Set<String>(minimumCapacity: members.count)
        for member in members where !seen.insert(member.key).inserted {
            throw ValidationError(field: member.key, message: "is given twice")
        }
        if let unknown = members.map(\.key).filter({ !Self.jsonFields.contains($0) }).sorted().first {
            throw ValidationError(field: unknown, message: "is not a known field (expected one of: \(Self.jsonFields.sorted().joined(separator: ", ")))")
        }
        func value(_ key: String) -> JSONLineReader.Value? { members.first(where: { $0.key == key })?.value }

        guard case .string(let url)? = value("url") else {
            throw ValidationError(field: "url", message: value("url") == nil ? "is required" : "must be a string")
        }
        self.init(url: url)
        for (key, value) in members {
            switch key {
            case "url": break
            case "method": method = try Self.string(value, field: key)
            case "headers": headers = try Self.headers(value, reader: reader)
            case "body":
                switch value {
                case .null: body = nil
                case .string(let text): body = text
                case .number(let range), .object(let range), .array(let range):
                    guard let text = reader.text(range) else { throw ValidationError(field: "body", message: "is not valid UTF-8") }
                    body = text
                case .bool(let flag): body = flag ? "true" : "false"
                }
            case "queue": queue = try Self.string(value, field: key)
            case "priority": priority = try Self.integer(value, field: key, reader: reader)
            case "run_at": runAt = try Self.optionalTime(value, field: key)
            case "max_attempts": maxAttempts = try Self.integer(value, field: key, reader: reader)
            case "deadline": deadline = try Self.optionalTime(value, field: key)
            case "idempotency_key":
                if case .null = value { idempotencyKey = .none } else { idempotencyKey = .custom(try Self.string(value, field: key)) }
            case "unique_key": uniqueKey = try Self.optionalString(value, field: key)
            case "destination": destination = try Self.optionalString(value, field: key)
            case "timeout_ms": timeoutMilliseconds = try Self.integer(value, field: key, reader: reader)
            case "expect_content_type": expectContentType = try Self.optionalString(value, field: key)
            case "signing_secret": signingSecret = try Self.optionalString(value, field: key)
            case "traceparent": traceparent = try Self.optionalString(value, field: key)
            case "tracestate": tracestate = try Self.optionalString(value, field: key)
            case "fairness_key": fairnessKey = try Self.optionalString(value, field: key)
            default: break
            }
        }
    }

    /// `headers`: an object of name to a string or `{"secret": "NAME"}`, kept sorted by name.
    private static func headers(_ value: JSONLineReader.Value, reader: JSONLineReader) throws(ValidationError) -> [(name: String, value: HeaderValue)] {
        guard case .object(let range) = value, let members = try? reader.members(of: range) else {
            throw ValidationError(field: "headers", message: "must be a JSON object of name to value")
        }
        // Refuse an oversized object before building anything from it.
        guard members.count <= HeaderRules.maximumCount else {
            throw ValidationError(field: "headers", message: "more than \(HeaderRules.maximumCount) headers")
        }
        var result: [(name: String, value: HeaderValue)] = []
        result.reserveCapacity(members.count)
        for (name, raw) in members {
            switch raw {
            case .string(let text):
                result.append((name, .literal(text)))
            case .object(let inner):
                if let reference = try? reader.members(of: inner), reference.count == 1, reference[0].key == "secret",
                   case .string(let secret) = reference[0].value {
                    result.append((name, .secret(name: secret)))
                    continue
                }
                fallthrough
            default:
                throw ValidationError(field: "headers", message: "the value of \(Quoting.quote(name)) must be a string or {\"secret\": \"NAME\"}")
            }
        }
        return result.sorted { $0.name < $1.name }
    }

    private static func string(_ value: JSONLineReader.Value, field: String) throws(ValidationError) -> String {
        guard case .string(let text) = value else { throw ValidationError(field: field, message: "must be a string") }
        return text
    }

    private static func optionalString(_ value: JSONLineReader.Value, field: String) throws(ValidationError) -> String? {
        if case .null = value { return nil }
        return try string(value, field: field)
    }

    private static func integer(_ value: JSONLineReader.Value, field: String, reader: JSONLineReader) throws(ValidationError) -> Int {
        guard case .number(let range) = value, let text = reader.text(range) else {
            throw ValidationError(field: field, message: "must be a whole number")
        }
        if text.utf8.count <= 16, let whole = Int(text) { return whole }
        // 5.0 and 1e2 are whole numbers too.
        guard let number = Double(text), number == number.rounded(), abs(number) < 1e15 else {
            throw ValidationError(field: field, message: "must be a whole number")
        }
        return Int(number)
    }

    private static func optionalTime(_ value: JSONLineReader.Value, field: String) throws(ValidationError) -> Date? {
        if case .null = value { return nil }
        guard case .string(let text) = value else {
            throw ValidationError(field: field, message: "must be a string holding an RFC 3339 time such as 2030-01-01T10:00:00Z")
        }
        return try Timestamp.parse(text, field: field)
    }
}
