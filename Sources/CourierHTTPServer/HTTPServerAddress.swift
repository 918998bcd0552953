import CourierCore
import Foundation

/// Where an HTTP server listens, parsed from `HOST:PORT` (`--metrics-addr`, `--listen`).
///
/// Accepted forms: `0.0.0.0:9464`, `127.0.0.1:9464`, `localhost:9464`, `[::]:9464`,
/// `[::1]:9464`, and `:9464` (every interface). Port 0 picks a free port (for tests).
public struct HTTPServerAddress: Sendable, Equatable, CustomStringConvertible {
    /// The host name or address to bind; nil binds every IPv4 interface.
    public var host: String?
    public var port: Int

    public init(host: String?, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; errors name `field`.
    public init(parsing text: String, field: String) throws(ValidationError) {
        func fail(_ message: String) -> ValidationError {
            ValidationError(field: field, message: message)
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var host: Substring
        var portText: Substring
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else { throw fail("'\(text)' has '[' without ']'") }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            guard rest.hasPrefix(":") else { throw fail("expected HOST:PORT such as 0.0.0.0:9464, got '\(text)'") }
            portText = rest.dropFirst()
            if host.isEmpty { throw fail("the address between [ and ] is empty") }
        } else {
            guard let colon = trimmed.lastIndex(of: ":") else {
                throw fail("expected HOST:PORT such as 0.0.0.0:9464, got '\(text)'")
            }
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
            if host.contains(":") { throw fail("write an IPv6 address in brackets, such as [::1]:9464") }
        }
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText),
              (0...65535).contains(port) else {
            throw fail("the port must be a number from 0 to 65535, got '\(portText)'")
        }
        if host.contains(where: { $0.isWhitespace || $0 == "/" }) { throw fail("'\(host)' is not a host name or address") }
        self.init(host: host.isEmpty ? nil : String(host), port: port)
    }

    /// `HOST:PORT`, with IPv6 addresses in brackets.
    public var description: String {
        guard let host else { return ":\(port)" }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
