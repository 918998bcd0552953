/// Bad usage or bad input on the command line: an unknown option, a missing or
/// malformed value, conflicting options. The process should exit with
/// ``exitCode`` (2) after printing ``description`` to standard error.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of mistake was made.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable {
            case unknownOption = "unknown_option"
            case unknownCommand = "unknown_command"
            case missingCommand = "missing_command"
            case missingValue = "missing_value"
            case unexpectedValue = "unexpected_value"
            case invalidValue = "invalid_value"
            case duplicateOption = "duplicate_option"
            case missingArgument = "missing_argument"
            case unexpectedArgument = "unexpected_argument"
            case conflict = "conflict"
        }

        let base: Base

        /// An option or flag the command does not declare.
        public static let unknownOption = Code(base: .unknownOption)
        /// A subcommand name that does not exist.
        public static let unknownCommand = Code(base: .unknownCommand)
        /// A command group was invoked without one of its subcommands.
        public static let missingCommand = Code(base: .missingCommand)
        /// An option was given without its value.
        public static let missingValue = Code(base: .missingValue)
        /// A flag was given a value (`--json=yes`).
        public static let unexpectedValue = Code(base: .unexpectedValue)
        /// A value that does not parse or is not allowed.
        public static let invalidValue = Code(base: .invalidValue)
        /// A non-repeatable option was given twice.
        public static let duplicateOption = Code(base: .duplicateOption)
        /// A required option or positional argument is missing.
        public static let missingArgument = Code(base: .missingArgument)
        /// A positional word the command does not take.
        public static let unexpectedArgument = Code(base: .unexpectedArgument)
        /// Arguments that cannot be combined.
        public static let conflict = Code(base: .conflict)

        /// A stable snake_case name, for `--json` error output.
        public var description: String { base.rawValue }
    }

    /// The kind of mistake.
    public let code: Code
    /// The flag, argument or environment variable at fault (`--limit`, `ID`,
    /// `COURIER_CONCURRENCY`), when there is one.
    public let field: String?
    /// What is wrong, e.g. "expected a positive integer, got 'abc'".
    public let message: String
    /// The command being parsed, root first (`["jobctl", "dead", "replay"]`).
    public let commandPath: [String]

    /// Creates a usage error. Commands may throw their own for semantic checks
    /// the declaration cannot express (see ``ParsedCommand/invalid(_:_:)``).
    public init(code: Code, field: String?, message: String, commandPath: [String] = []) {
        self.code = code
        self.field = field
        self.message = message
        self.commandPath = commandPath
    }

    /// Always 2: bad usage or bad input.
    public var exitCode: Int32 { 2 }

    /// `error: --limit: expected a positive integer, got 'abc'`.
    public var description: String {
        if let field {
            return "error: \(field): \(message)"
        }
        return "error: \(message)"
    }

    /// A pointer to the help of the command at fault, e.g.
    /// "Run 'jobctl dead replay --help' for usage."
    public var helpHint: String? {
        guard !commandPath.isEmpty else { return nil }
        return "Run '\(commandPath.joined(separator: " ")) --help' for usage."
    }
}
