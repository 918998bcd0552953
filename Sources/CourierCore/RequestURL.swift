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
            throw ValidationError(field: field, message: "URL \(Quoting.quote(text)) contains whitespace or control characters")
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(text)) has no scheme; write http:// or https://")
        }
        let scheme = String(text[..<colon]).asciiLowercased
        guard scheme == "http" || scheme == "https" else {
            throw ValidationError(field: field, message: "scheme \(Quoting.quote(String(text[..<colon]))) is not allowed; only http and https")
        }
        let afterScheme = text[text.index(after: colon)...]
        guard afterScheme.hasPrefix("//") else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(text)) must have // and a host after the scheme")
        }
        let rest = afterScheme.dropFirst(2)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if authority.contains("@") {
            throw ValidationError(field: field, message: "credentials in the URL are not allowed; send them in a header (by secret reference)")
        }
        guard !authority.isEmpty else {
            throw ValidationError(field: field, message: "URL \(Quoting.quote(text)) has no host")
        }

        var hostPart: Substring
        var portPart: Substring?
        var isIPLiteral = false
        var host: String
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ValidationError(field: field, message: "IPv6 host in URL \(Quoting.quote(text)) has no closing ]")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw ValidationError(field: field, message: "unexpected text after the IPv6 host in URL \(Quoting.quote(text))")
                }
                portPart = after.dropFirst()
            }
            guard !hostPart.contains("%"), let address = IPAddress(String(hostPart)), case .v6 = address else {
                throw ValidationError(field: field, message: "\(Quoting.quote(String(hostPart))) is not a valid IPv6 address")
            }
            host = address.description
            isIPLiteral = true
        } else {
            if let portColon = authority.lastIndex(of: ":") {
                hostPart = authority[..<portColon]
                portPart = authority[authority.index(after: portColon)...]
            } else {
                hostPart = authority
            }
            guard !hostPart.isEmpty else {
                throw ValidationError(field: field, message: "URL \(Quoting.quote(text)) has no host")
            }
            guard hostPart.utf8.count <= 253, hostPart.utf8.allSatisfy({ $0.isHostNameCharacter }) else {
                throw ValidationError(field: field, message: "host \(Quoting.quote(String(hostPart))) is not a valid host name (write internationalized names in punycode)")
            }
            guard !hostPart.hasPrefix("."), !hostPart.contains("..") else {
                throw ValidationError(field: field, message: "host \(Quoting.quote(String(hostPart))) has an empty label")
            }
            host = String(hostPart).asciiLowercased
            if let v4 = IPAddress.parseV4(hostPart) {
                host = IPAddress.formatV4(v4)
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

    /// The breaker key: `scheme://host:port`, lower case, IPv6 in brackets,
    /// with the default port written out.
    public var destination: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost):\(port)"
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
