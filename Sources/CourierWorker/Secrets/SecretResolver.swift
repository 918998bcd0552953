import CourierCore
import Foundation

/// Resolves secret names (`{"secret": "NAME"}` header values, signing secrets) at send
/// time, so credentials never sit in the database, and only for the destinations each
/// secret is bound to, so whoever may enqueue cannot send a worker's secret to a URL of
/// their own.
///
/// The value: first `COURIER_SECRET_<NAME>` in the worker's environment (NAME
/// upper-cased, anything but letters and digits as `_`), then the file `NAME` in the
/// secrets directory (for example a mounted Kubernetes Secret), trailing newline removed.
/// Files are read through a ``SecretFileCache``: again only when they change.
///
/// The binding: the destinations (`scheme://host[:port]`, default ports filled in) the
/// secret may be sent to, separated by commas, spaces or new lines, from
/// `COURIER_SECRET_<NAME>_DESTINATIONS`, else the file `NAME.destinations` beside the
/// secret's file. `*` alone allows every destination, and must be written out.
///
/// A secret without a binding is refused (deny unless bound): an allowlist that is off
/// until configured would let any enqueuer of a production queue read every secret by
/// pointing a job at a server of their own, and nothing would tell the operator.
public struct SecretResolver: Sendable {
    /// Why a secret was not given out.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// Neither source holds the secret.
        case missing(name: String)
        /// The secret has no binding, or its binding does not list the destination.
        case notBound(name: String, destination: String)
        /// The binding cannot be read: an entry is not a destination.
        case badBinding(name: String, reason: String)
        /// The URL the secret would be sent to is not a valid job URL.
        case badURL(reason: String)

        public var description: String {
            switch self {
            case .missing(let name):
                return "secret \(Quoting.quote(name)) is not set (\(SecretResolver.environmentName(for: name)) or the secrets directory)"
            case .notBound(let name, let destination):
                return "secret \(Quoting.quote(name)) may not be sent to \(destination): it is sent only to the destinations "
                    + "listed in \(SecretResolver.bindingEnvironmentName(for: name)) or the file \(name)\(SecretResolver.bindingFileSuffix) "
                    + "in the secrets directory"
            case .badBinding(let name, let reason):
                return "the destinations of secret \(Quoting.quote(name)) cannot be read: \(reason)"
            case .badURL(let reason):
                return "secret not resolved: \(reason)"
            }
        }
    }

    /// The suffix of a binding file beside the secret's file.
    public static let bindingFileSuffix = ".destinations"
    private static let bindingEnvironmentSuffix = "_DESTINATIONS"

    private let environment: [String: String]
    private let directory: String?
    private let files: SecretFileCache

    /// - Parameter files: where the directory's files are read through (copies of this
    ///   resolver share it), so an attempt reads no file while the last read stands.
    public init(environment: [String: String], directory: String?, files: SecretFileCache = SecretFileCache()) {
        self.environment = environment
        self.directory = directory
        self.files = files
    }

    public static func environmentName(for name: String) -> String {
        "COURIER_SECRET_" + String(name.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// The variable that lists where secret `name` may be sent.
    public static func bindingEnvironmentName(for name: String) -> String {
        environmentName(for: name) + bindingEnvironmentSuffix
    }

    /// The secret's value, if it is bound to the destination of `url`.
    public func resolve(_ name: String, for url: String) -> Result<String, Refusal> {
        let destination: String
        do {
            destination = try Destination.derive(fromURL: url)
        } catch {
            return .failure(.badURL(reason: error.description))
        }
        return resolve(name, forDestination: destination)
    }

    /// The secret's value, if it is bound to `destination` (`scheme://host:port`).
    public func resolve(_ name: String, forDestination destination: String) -> Result<String, Refusal> {
        // A binding is not itself a secret to hand out.
        if Self.environmentName(for: name).hasSuffix(Self.bindingEnvironmentSuffix) || name.hasSuffix(Self.bindingFileSuffix) {
            return .failure(.missing(name: name))
        }
        guard let value = value(of: name) else { return .failure(.missing(name: name)) }
        switch SecretBinding.parse(bindingText(of: name)) {
        case .failure(let error):
            return .failure(.badBinding(name: name, reason: error.reason))
        case .success(let binding):
            guard binding.allows(destination) else { return .failure(.notBound(name: name, destination: destination)) }
            return .success(value)
        }
    }

    /// The raw value, bound or not.
    private func value(of name: String) -> String? {
        if let value = environment[Self.environmentName(for: name)] { return value }
        return file(name)
    }

    private func bindingText(of name: String) -> String? {
        if let text = environment[Self.bindingEnvironmentName(for: name)] { return text }
        return file(name + Self.bindingFileSuffix)
    }

    /// A file of the secrets directory; names cannot leave it.
    private func file(_ name: String) -> String? {
        guard let directory, !name.contains("/"), !name.hasPrefix(".") else { return nil }
        guard var text = files.text(atPath: directory + "/" + name) else { return nil }
        // By scalar: "\r\n" is one Character, which hasSuffix("\n") does not match.
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        return text
    }
}

/// Where one secret may be sent: a set of destinations, or every destination.
/// Pure; parsed from the binding text of ``SecretResolver``.
public struct SecretBinding: Sendable, Equatable {
    /// `scheme://host:port` keys, as ``Destination/derive(fromURL:field:)`` writes them.
    public var destinations: Set<String>
    /// `*`: any destination.
    public var any: Bool

    /// Why a binding cannot be read.
    public struct BindingError: Error, Sendable, Equatable {
        public var reason: String
    }

    /// Whether the secret may be sent to `destination`.
    public func allows(_ destination: String) -> Bool { any || destinations.contains(destination) }

    /// Reads a binding: entries separated by commas or white space; `#` starts a comment
    /// to the end of the line. No text, or no entry, binds the secret to nothing.
    public static func parse(_ text: String?) -> Result<SecretBinding, BindingError> {
        var binding = SecretBinding(destinations: [], any: false)
        guard let text else { return .success(binding) }
        for line in text.split(whereSeparator: \.isNewline) {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for entry in content.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
                if entry == "*" {
                    binding.any = true
                    continue
                }
                do {
                    binding.destinations.insert(try Destination.derive(fromURL: String(entry), field: "destination"))
                } catch {
                    return .failure(BindingError(reason: "\(Quoting.quote(String(entry))) is not a destination such as https://api.example.com"))
                }
            }
        }
        return .success(binding)
    }
}
