/// The outcome of parsing a command line for a runnable command: which command,
/// and the values of its arguments.
///
/// Arguments are looked up by their long name, with or without dashes
/// (`"limit"` or `"--limit"`); positional arguments by their key. A value comes
/// from the command line, else from the argument's environment variable, else
/// from its declared default.
public struct ParsedCommand: Sendable {
    /// Where a value came from.
    public enum Source: Sendable, Equatable {
        /// Given on the command line.
        case commandLine
        /// Read from this environment variable.
        case environment(String)
        /// The declared default.
        case defaultValue
    }

    struct Entry: Sendable {
        var values: [String]
        var source: Source
    }

    /// The subcommand names below the root, e.g. `["dead", "replay"]`; empty
    /// for a root command without subcommands.
    public let path: [String]
    /// The root's name followed by ``path``, e.g. `["jobctl", "dead", "replay"]`.
    public let commandPath: [String]
    /// The arguments this command accepts (its own and inherited global ones).
    public let arguments: [ArgumentSpec]
    let entries: [String: Entry]

    init(path: [String], commandPath: [String], arguments: [ArgumentSpec], entries: [String: Entry]) {
        self.path = path
        self.commandPath = commandPath
        self.arguments = arguments
        self.entries = entries
    }

    static func key(_ name: String) -> String {
        var name = Substring(name)
        while name.hasPrefix("-") { name = name.dropFirst() }
        return String(name)
    }

    /// The declaration of `name`. Asking for an undeclared name is a programming
    /// error and trips an assertion in debug builds.
    public func spec(_ name: String) -> ArgumentSpec? {
        let key = Self.key(name)
        let spec = arguments.first { $0.long == key }
        assert(spec != nil, "'\(name)' is not declared by '\(commandPath.joined(separator: " "))'")
        return spec
    }

    /// Whether the flag was given (or set through its environment variable).
    public func flag(_ name: String) -> Bool {
        _ = spec(name)
        return entries[Self.key(name)] != nil
    }

    /// The option's value (the last one when given several times), or nil when
    /// it is absent and has no default.
    public func value(_ name: String) -> String? {
        _ = spec(name)
        return entries[Self.key(name)]?.values.last
    }

    /// Every value of a repeatable option or positional argument, in order.
    public func values(_ name: String) -> [String] {
        _ = spec(name)
        return entries[Self.key(name)]?.values ?? []
    }

    /// The words given for a positional argument.
    public func positionals(_ name: String) -> [String] {
        values(name)
    }

    /// Where the argument's value came from, or nil when it is absent.
    public func source(of name: String) -> Source? {
        _ = spec(name)
        return entries[Self.key(name)]?.source
    }

    /// Whether the user gave the argument, on the command line or through the
    /// environment (a default does not count).
    public func isSpecified(_ name: String) -> Bool {
        switch source(of: name) {
        case .commandLine, .environment: return true
        case .defaultValue, nil: return false
        }
    }

    /// How an error about this argument names it: the environment variable when
    /// the value came from there, else `--long` (or the positional's value name).
    public func fieldName(_ name: String) -> String {
        if case .environment(let variable) = source(of: name) { return variable }
        return spec(name)?.displayName ?? name
    }

    /// A usage error about this argument's value, for semantic checks the
    /// declaration cannot express: `throw parsed.invalid("header", "expected 'Name: value', got 'x'")`.
    public func invalid(_ name: String, _ message: String) -> UsageError {
        UsageError(code: .invalidValue, field: fieldName(name), message: message, commandPath: commandPath)
    }
}
