/// An HTTP request method, normalized to upper case.
public struct HTTPMethod: Sendable, Hashable, RawRepresentable, CustomStringConvertible, Codable {
    /// The method name in upper case, e.g. `POST`.
    public let rawValue: String

    /// Wraps `rawValue` as given (use ``parse(_:field:)`` for untrusted input).
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let delete = HTTPMethod(rawValue: "DELETE")
    public static let trace = HTTPMethod(rawValue: "TRACE")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let patch = HTTPMethod(rawValue: "PATCH")

    /// The longest method name accepted.
    public static let maximumLength = 32

    /// Validates a method (an RFC 9110 token of at most ``maximumLength``
    /// characters) and returns it upper-cased.
    public static func parse(_ text: String, field: String = "method") throws(ValidationError) -> HTTPMethod {
        guard !text.isEmpty else {
            throw ValidationError(field: field, message: "method must not be empty")
        }
        guard text.utf8.count <= maximumLength, text.utf8.allSatisfy(\.isHTTPTokenCharacter) else {
            throw ValidationError(field: field, message: "method \(Quoting.quote(text)) is not a valid HTTP method token")
        }
        return HTTPMethod(rawValue: text.asciiUppercased)
    }

    /// The methods that are idempotent by definition (RFC 9110 §9.2.2). The one list:
    /// the worker's retry decisions and the store's lease rescue (which binds it into its
    /// SQL) both read it.
    public static let idempotent: [HTTPMethod] = [.get, .head, .options, .put, .delete, .trace]

    /// Whether repeating the method is safe by definition (one of ``idempotent``).
    /// Case-insensitive.
    public static func isIdempotent(_ method: String) -> Bool {
        let upper = method.asciiUppercased
        return idempotent.contains { $0.rawValue == upper }
    }

    /// Whether this method is idempotent (see ``isIdempotent(_:)``).
    public var isIdempotent: Bool { Self.isIdempotent(rawValue) }
}
