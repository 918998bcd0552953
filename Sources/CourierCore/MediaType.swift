/// A media type's `type/subtype`, lower-cased, without parameters.
///
/// Used to compare a response's `Content-Type` with a job's
/// `expect_content_type`: parameters (`charset=...`) and case are ignored.
public struct MediaType: Sendable, Hashable, CustomStringConvertible {
    /// The top-level type, e.g. `application`, or `*`.
    public var type: String
    /// The subtype, e.g. `json`, `problem+json`, or `*`.
    public var subtype: String

    /// Parses `type/subtype[; params]`; nil if malformed.
    public init?(_ text: String) {
        let essence = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let parts = essence.trimmingWhitespace().asciiLowercased.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].utf8.allSatisfy(\.isHTTPTokenCharacter), parts[1].utf8.allSatisfy(\.isHTTPTokenCharacter)
        else { return nil }
        type = String(parts[0])
        subtype = String(parts[1])
    }

    public var description: String { "\(type)/\(subtype)" }

    /// Whether this is JSON: `application/json` or any `+json` suffix type.
    public var isJSON: Bool {
        (type == "application" && subtype == "json") || subtype.hasSuffix("+json")
    }

    /// Validates a job's `expect_content_type` value.
    public static func parseExpectation(_ text: String, field: String = "expect_content_type") throws(ValidationError) -> MediaType {
        guard let value = MediaType(text) else {
            throw ValidationError(field: field, message: "\(Quoting.quote(text)) is not a media type like application/json")
        }
        return value
    }

    /// Whether a received media type satisfies this expected one.
    ///
    /// `*/*` and `type/*` are wildcards. An expected `application/json` is also
    /// satisfied by any structured `+json` type (e.g. `application/problem+json`).
    public func accepts(_ received: MediaType) -> Bool {
        if type == "*" && subtype == "*" { return true }
        guard type == received.type else {
            return type == "application" && subtype == "json" && received.subtype.hasSuffix("+json")
        }
        if subtype == "*" || subtype == received.subtype { return true }
        return subtype == "json" && received.subtype.hasSuffix("+json")
    }
}
