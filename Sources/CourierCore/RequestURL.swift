/// A job's URL, checked and taken apart: only `http` and `https`, a host,
/// an optional port, and no credentials.
///
/// Parsing is strict and pure (no Foundation URL): no whitespace or control
/// characters anywhere, a scheme of `http` or `https` (any case), then
/// `//authority` with a host that is a DNS name (letters, digits, `-`, `_`,
/// `.`; internationalized names must be written in punycode), a dotted-quad
/// IPv4 address, or an IPv6 address in brackets (without a zone); an optional
/// port 1-65535. User information (`user:pass@`) is refused, because the URL
/// is stored and logged: send credentials in a header, by secret reference.
public struct RequestURL: Sendable, Equatable {
    /// `http` or `https`, lower case.
    public var scheme: String
    /// The host in lower case; IPv6 without brackets, in canonical form.
    public var host: String
    /// The port, explicit or the scheme's default.
    public var port: Int
    /// Whether the URL named the port.
    public var hasExplicitPort: Bool
    /// Whether the host is an IP literal rather than a name.
    public var isIPLiteral: Bool

    /// The longest URL accepted, in bytes.
    public static let maximumLength = 8192

    /// Parses and validates `text`; errors name `field`.
    public init(_ text: String, field: String = "url") throws(ValidationError) {
        guard !text.isEmpty else { throw ValidationError(field: field, message: "must not be empty") }
        guard text.utf8.count <= Self.maximumLength else {
            throw ValidationError(field: field, message: "is longer than \(Self.maximumLength) bytes")
        }
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(Redaction.redactURL(text))) contains whitespace or control characters")
        }
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(Redaction.redactURL(text))) has no scheme; write http:// or https://")
        }
        let scheme = String(text[..<colon]).asciiLowercased
        guard scheme == "http" || scheme == "https" else {
            throw ValidationError(field: field, message: "scheme \(Quoting.quote(String(text[..<colon]))) is not allowed; only http and https")
        }
        let afterScheme = text[text.utf8.index(after: colon)...]
        guard afterScheme.utf8.count >= 2, afterScheme.utf8.prefix(2).allSatisfy({ $0 == UInt8(ascii: "/") }) else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(Redaction.redactURL(text))) must have // and a host after the scheme")
        }
        let rest = afterScheme[afterScheme.utf8.index(afterScheme.startIndex, offsetBy: 2)...]
        let authorityEnd = rest.utf8.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") })
            ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if authority.utf8.contains(UInt8(ascii: "@")) {
            throw ValidationError(field: field, message: "credentials in the URL are not allowed; send them in a header (by secret reference)")
        }
        guard !authority.isEmpty else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(Redaction.redactURL(text))) has no host")
        }

        var hostPart: Substring
        var portPart: Substring?
        var isIPLiteral = false
        var host: String
        if authority.utf8.first == UInt8(ascii: "[") {
            guard let close = authority.utf8.firstIndex(of: UInt8(ascii: "]")) else {
                throw ValidationError(field: field, message: "IPv6 host in URL \(Quoting.quote(Redaction.redactURL(text))) has no closing ]")
            }
            hostPart = authority[authority.utf8.index(after: authority.startIndex)..<close]
            let after = authority[authority.utf8.index(after: close)...]
            if !after.isEmpty {
                guard after.utf8.first == UInt8(ascii: ":") else {
                    throw ValidationError(field: field, message: "unexpected text after the IPv6 host in URL \(Quoting.quote(Redaction.redactURL(text)))")
                }
                portPart = after[after.utf8.index(after: after.startIndex)...]
            }
            guard !hostPart.utf8.contains(UInt8(ascii: "%")), let address = IPAddress(String(hostPart)), case .v6 = address else {
                throw ValidationError(field: field, message: "\(Quoting.quote(String(hostPart))) is not a valid IPv6 address")
            }
            host = address.description
            isIPLiteral = true
        } else {
            if let portColon = authority.utf8.lastIndex(of: UInt8(ascii: ":")) {
                hostPart = authority[..<portColon]
                portPart = authority[authority.utf8.index(after: portColon)...]
            } else {
                hostPart = authority
            }
            guard !hostPart.isEmpty else {
                throw ValidationError(field: field, message: "URL \(Quoting.quote(Redaction.redactURL(text))) has no host")
            }
            guard hostPart.utf8.count <= 253, hostPart.utf8.allSatisfy({ $0.isHostNameCharacter }) else {
                throw ValidationError(field: field, message: "host \(Quoting.quote(String(hostPart))) is not a valid host name (write internationalized names in punycode)")
            }
            guard hostPart.utf8.first != UInt8(ascii: "."), !hostPart.utf8.hasEmptyLabel else {
                throw ValidationError(field: field, message: "host \(Quoting.quote(String(hostPart))) has an empty label")
            }
            host = hostPart.asciiLowercased
            if IPAddress.parseV4(hostPart) != nil {
                // parseV4 takes only the canonical dotted quad (no leading zeros): keep the text.
                isIPLiteral = true
            } else if hostPart.utf8.allSatisfy({ $0.decimalDigit != nil || $0 == UInt8(ascii: ".") }) {
                throw ValidationError(field: field, message: "host \(Quoting.quote(String(hostPart))) is not a valid IPv4 address")
            }
        }

        var port = scheme == "https" ? 443 : 80
        var explicit = false
        if let portPart, !portPart.isEmpty {
            guard portPart.utf8.count <= 5, let value = Int(digits: String(portPart)), (1...65_535).contains(value) else {
                throw ValidationError(field: field, message: "port \(Quoting.quote(String(portPart))) must be a number from 1 to 65535")
            }
            port = value
            explicit = true
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        self.hasExplicitPort = explicit
        self.isIPLiteral = isIPLiteral
    }

    /// The breaker key: `scheme://host:port`, lower case, IPv6 in brackets, a DNS name's
    /// trailing dot (the root) dropped, the port without leading zeros and the default port
    /// written out. `courier.destination_of` (sql/schema/destinations.sql) applies the same
    /// rules; DestinationAgreementTests holds the two together.
    public var destination: String {
        let shownHost: Substring
        if host.utf8.contains(UInt8(ascii: ":")) {
            shownHost = "[\(host)]"
        } else if host.utf8.last == UInt8(ascii: ".") {
            shownHost = host.dropLast()
        } else {
            shownHost = Substring(host)
        }
        return "\(scheme)://\(shownHost):\(port)"
    }
}

extension Substring.UTF8View {
    /// Whether two dots follow each other (an empty DNS label). Written out because
    /// `contains("..")` resolves to Foundation's NSString search, which was a quarter
    /// of a bulk load's client time.
    var hasEmptyLabel: Bool {
        var previousWasDot = false
        for byte in self {
            let isDot = byte == UInt8(ascii: ".")
            if isDot && previousWasDot { return true }
            previousWasDot = isDot
        }
        return false
    }
}

extension UInt8 {
    var isHostNameCharacter: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
