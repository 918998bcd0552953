/// One HTTP header field as sent or received. Names compare case-insensitively
/// through the lookup helpers; the stored name keeps its original spelling.
public struct HTTPHeader: Sendable, Equatable, Hashable, Codable {
    /// The field name, e.g. `Content-Type`.
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Validates a header for sending: the name is an RFC 9110 token and the
    /// value has no control byte but tab (CR, LF and NUL would allow header injection;
    /// see ``HeaderRules/isAllowedValueByte(_:)``).
    public static func validate(name: String, value: String, field: String = "headers") throws(ValidationError) {
        guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(\.isHTTPTokenCharacter) else {
            throw ValidationError(field: field, message: "header name \(Quoting.quote(name)) is not a valid HTTP token")
        }
        guard value.utf8.allSatisfy(HeaderRules.isAllowedValueByte) else {
            // Never echo the value: it may be a secret.
            throw ValidationError(field: field, message: "the value of header \(Quoting.quote(name)) contains a control character")
        }
    }
}

extension Array where Element == HTTPHeader {
    /// The value of the first header named `name` (case-insensitive), if any.
    public func value(forName name: String) -> String? {
        first { $0.name.caseInsensitiveEquals(name) }?.value
    }
}

extension UInt8 {
    /// `tchar` from RFC 9110 §5.6.2.
    var isHTTPTokenCharacter: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(self)
        }
    }
}

extension UInt8 {
    var asciiLowercased: UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self + 32 : self
    }
}
