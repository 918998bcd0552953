import CourierCore
import Foundation

/// Which `Host` header values the dashboard answers: loopback names and addresses
/// always, the address it listens on when that is a single address, and the names
/// given with `--allowed-host`. It is checked on every request, with a token or
/// without, so a web page that points its own name at this machine (DNS rebinding)
/// is refused before it can read a page or try a token from the operator's browser.
/// It stops browsers only: a program other than a browser writes any `Host` it likes.
/// Pure value.
public struct AllowedHosts: Sendable, Equatable {
    /// The names and addresses allowed besides loopback: lower case, without port or
    /// brackets, addresses in canonical form.
    public let names: Set<String>

    /// - Parameters:
    ///   - listenHost: the host the dashboard listens on; allowed unless it is every
    ///     address (nil, `0.0.0.0`, `::`).
    ///   - extra: the `--allowed-host` names, as ``validated(_:field:)`` returned them.
    public init(listenHost: String?, extra: [String] = []) {
        var names = Set(extra.compactMap(Self.name(of:)))
        if let listenHost, let name = Self.name(of: listenHost), !Self.isEveryAddress(name) {
            names.insert(name)
        }
        self.names = names
    }

    /// Whether a request with this `Host` header may be answered.
    public func allows(_ host: String?) -> Bool {
        guard let host, let name = Self.name(of: host) else { return false }
        return Self.isLoopback(name) || names.contains(name)
    }

    /// The name or address a `Host` header (or `--listen` host) names: lower case,
    /// without its port or IPv6 brackets, an address in canonical form; nil when empty.
    public static func name(of host: String) -> String? {
        var name = host.trimmingCharacters(in: .whitespaces).lowercased()
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            name = String(name[name.index(after: name.startIndex)..<close])
        } else if let colon = name.lastIndex(of: ":"), !name[..<colon].contains(":") {
            name = String(name[..<colon])
        }
        if name.isEmpty { return nil }
        return IPAddress(name)?.description ?? name
    }

    /// Whether `name` (no port) is this machine's loopback: `localhost`, or an address
    /// in 127.0.0.0/8 or `::1`.
    public static func isLoopback(_ name: String) -> Bool {
        let name = name.lowercased()
        return name == "localhost" || IPAddress(name)?.isLoopback == true
    }

    /// Whether `name` is the unspecified address (listening on it means every address).
    static func isEveryAddress(_ name: String) -> Bool {
        name == "0.0.0.0" || name == "::"
    }

    /// Checks one `--allowed-host` value: a DNS name or an IP address (IPv6 with or
    /// without brackets), without scheme, port or path. Returns it as ``name(of:)`` would.
    public static func validated(_ text: String, field: String) throws(ValidationError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var bare = Substring(trimmed)
        if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
        if let address = IPAddress(String(bare)) { return address.description }
        let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "." || c == "_") }
        guard !bare.isEmpty, bare.allSatisfy(allowed), bare.first != ".", bare.first != "-" else {
            throw ValidationError(field: field, message: "expected a host name such as dashboard.example.com or an IP address, "
                                  + "without scheme, port or path; got '\(text)'")
        }
        return bare.lowercased()
    }
}
