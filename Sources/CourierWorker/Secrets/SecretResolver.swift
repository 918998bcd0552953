import CourierCore
import Foundation

/// Resolves secret names (`{"secret": "NAME"}` header values, signing secrets) at send
/// time, so credentials never sit in the database, and only for the destinations each
/// secret is bound to, so whoever may enqueue cannot send a worker's secret to a URL of
/// their own.
///
/// A secret lives in one of two places, and its value and its binding always come from
/// that one place:
/// - the environment: the value in `COURIER_SECRET_<NAME>` (NAME upper-cased, anything but
///   letters and digits as `_`), the binding in `COURIER_SECRET_<NAME>_DESTINATIONS`;
/// - the secrets directory (for example a mounted Kubernetes Secret): the value in the
///   file `NAME`, trailing newline removed, the binding in the file `NAME.destinations`
///   beside it. Files are read through a ``SecretFileCache``: again only when they change.
///
/// The environment's spelling folds names together (`api.token`, `api-token` and
/// `API_TOKEN` all read `COURIER_SECRET_API_TOKEN`), the directory's does not. So a name
/// with anything in both places (a value or a binding in the environment, and a value or
/// a binding file in the directory) is refused as ambiguous, never resolved half from one
/// place and half from the other: a binding meant for another name must not decide where
/// this one goes.
///
/// The binding: the destinations (`scheme://host[:port]`, default ports filled in) the
/// secret may be sent to, separated by commas, spaces or new lines. `*` alone allows every
/// destination, and must be written out. An entry with a path, query or fragment is
/// refused (see ``SecretBinding``).
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
        /// The name has something in the environment and something in the secrets
        /// directory: `environment` lists the variables set, `files` the files present.
        case ambiguous(name: String, environment: [String], files: [String])

        public var description: String {
            switch self {
            case .missing(let name):
                return "secret \(Quoting.quote(name)) is not set (\(SecretResolver.environmentName(for: name)) or the secrets directory)"
            case .notBound(let name, let destination):
                return "secret \(Quoting.quote(name)) may not be sent to \(destination): it is sent only to the destinations "
                    + "listed beside it, in \(SecretResolver.bindingEnvironmentName(for: name)) for a secret in the environment "
                    + "or the file \(name)\(SecretResolver.bindingFileSuffix) for one in the secrets directory"
            case .badBinding(let name, let reason):
                return "the destinations of secret \(Quoting.quote(name)) cannot be read: \(reason)"
            case .badURL(let reason):
                return "secret not resolved: \(reason)"
            case .ambiguous(let name, let environment, let files):
                return "secret \(Quoting.quote(name)) is ambiguous: \(environment.joined(separator: " and ")) "
                    + "\(environment.count == 1 ? "is" : "are") set in the environment and the secrets directory holds "
                    + "\(files.joined(separator: " and ")); a secret and its destinations are read from one place "
                    + "(the environment spells api.token, api-token and API_TOKEN alike), so remove one of them"
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

    private static let environmentPrefix = "COURIER_SECRET_"

    public static func environmentName(for name: String) -> String {
        environmentPrefix + String(name.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
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
        let source: (value: String?, binding: String?)
        switch place(of: name) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let found): source = found
        }
        guard let value = source.value else { return .failure(.missing(name: name)) }
        switch SecretBinding.parse(source.binding) {
        case .failure(let error):
            return .failure(.badBinding(name: name, reason: error.reason))
        case .success(let binding):
            guard binding.allows(destination) else { return .failure(.notBound(name: name, destination: destination)) }
            return .success(value)
        }
    }

    /// Every binding that cannot be read, and every name that is ambiguous, as the worker
    /// finds them now: one line each, naming the variable or file. The worker checks this at
    /// start and refuses to run with any, so a mistyped binding stops the deployment instead
    /// of failing, one by one, the jobs that later name the secret. (The directory can change
    /// while the worker runs; a binding broken later is still refused when a job needs it.)
    public func startupProblems() -> [String] {
        var problems: [String] = []
        for (variable, text) in environment.sorted(by: { $0.key < $1.key })
        where variable.hasPrefix(Self.environmentPrefix) && variable.hasSuffix(Self.bindingEnvironmentSuffix) {
            if case .failure(let error) = SecretBinding.parse(text) { problems.append("\(variable): \(error.reason)") }
        }
        guard let directory else { return problems }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { !$0.hasPrefix(".") }.sorted()
        for name in names where name.hasSuffix(Self.bindingFileSuffix) {
            if case .failure(let error) = SecretBinding.parse(file(name)) { problems.append("\(directory)/\(name): \(error.reason)") }
        }
        let secretNames = Set(names.map { $0.hasSuffix(Self.bindingFileSuffix) ? String($0.dropLast(Self.bindingFileSuffix.count)) : $0 })
        for name in secretNames.sorted() {
            if case .failure(let refusal) = place(of: name) { problems.append(refusal.description) }
        }
        return problems
    }

    /// The value and the binding text of `name`, both from the one place that has the
    /// name; nils when neither has it; ambiguous when both have something of it.
    private func place(of name: String) -> Result<(value: String?, binding: String?), Refusal> {
        let valueVariable = Self.environmentName(for: name), bindingVariable = Self.bindingEnvironmentName(for: name)
        let environmentValue = environment[valueVariable], environmentBinding = environment[bindingVariable]
        let bindingFile = name + Self.bindingFileSuffix
        let fileValue = file(name), fileBinding = file(bindingFile)
        let variables = [(valueVariable, environmentValue), (bindingVariable, environmentBinding)].filter { $0.1 != nil }.map(\.0)
        let files = [(name, fileValue), (bindingFile, fileBinding)].filter { $0.1 != nil }.map(\.0)
        if !variables.isEmpty && !files.isEmpty {
            return .failure(.ambiguous(name: name, environment: variables, files: files))
        }
        return .success(variables.isEmpty ? (fileValue, fileBinding) : (environmentValue, environmentBinding))
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
///
/// An entry is an origin, `scheme://host[:port]` (a trailing `/` is allowed). An entry with
/// a path (`https://api.example.com/hooks`), a query or a fragment is refused when the
/// binding is read, rather than matched: a secret is sent to an origin, and the server
/// there decides which of its handlers reads the request, by its own normalisation of the
/// path (`..`, `%2e%2e`, `%2f`, `;`, `\`, case, a proxy's rewriting), which a prefix check
/// on this side cannot know. Refused, the entry says so once; matched, it would promise a
/// boundary the worker cannot keep. (Entries with paths used to be widened to the whole
/// origin without a word.) To keep a secret from part of a host, give that part a host of
/// its own.
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
                let destination: String
                do {
                    destination = try Destination.derive(fromURL: String(entry), field: "destination")
                } catch {
                    return .failure(BindingError(reason: "\(Quoting.quote(String(entry))) is not a destination such as https://api.example.com"))
                }
                let rest = afterOrigin(entry)
                guard rest.isEmpty || rest == "/" else {
                    return .failure(BindingError(reason: "\(Quoting.quote(String(entry))) has a path, query or fragment (\(Quoting.quote(String(rest)))); "
                        + "a secret is bound to whole origins: write \(destination)"))
                }
                binding.destinations.insert(destination)
            }
        }
        return .success(binding)
    }

    /// What follows the authority of an entry that is a valid URL: `""`, `/`, or a path, query or fragment.
    private static func afterOrigin(_ entry: Substring) -> Substring {
        guard let slashes = entry.range(of: "//") else { return "" }
        let authority = entry[slashes.upperBound...]
        guard let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return "" }
        return authority[end...]
    }
}
