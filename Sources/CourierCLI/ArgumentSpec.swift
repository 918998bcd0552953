/// The declaration of one command-line argument: an option that takes a value,
/// a flag, or a positional argument.
///
/// A command declares its arguments once; parsing, validation, environment
/// fallback and help text are all derived from these values.
public struct ArgumentSpec: Sendable, Equatable {
    /// What shape the argument has on the command line.
    public enum Kind: Sendable, Equatable {
        /// `--name VALUE` or `--name=VALUE`; `valueName` is shown in help (`--limit N`).
        case option(valueName: String)
        /// `--name`, present or absent.
        case flag
        /// A bare word, matched by position; `valueName` is shown in help (`ID`).
        case positional(valueName: String)
    }

    /// The argument's shape.
    public var kind: Kind
    /// The long name without dashes (`limit` for `--limit`). For a positional
    /// argument this is the key used to read its values back.
    public var long: String
    /// An optional one-letter alias (`n` for `-n`). `h` is reserved for help.
    public var short: Character?
    /// One or two sentences for the help text.
    public var help: String
    /// Whether the option may be given several times (`--header` ...), or the
    /// positional argument takes all remaining words (`ID...`).
    public var repeatable: Bool
    /// Whether the argument must be given (on the command line or through its
    /// environment variable).
    public var required: Bool
    /// The value used when the option is absent; shown in help.
    public var defaultValue: String?
    /// An environment variable read when the option or flag is absent from the
    /// command line. The command line always wins.
    public var environmentVariable: String?
    /// Arguments sharing a group name are mutually exclusive.
    public var exclusiveGroup: String?
    /// When set, the value must be one of these strings.
    public var allowedValues: [String]?
    /// For an option whose value may be left out (`--ndjson [FILE]`): the value
    /// used when none is given. The next word is taken as the value only when it
    /// does not start with a dash (a lone `-` is a value).
    public var implicitValue: String?
    /// A global argument is accepted by this command and every subcommand below it.
    public var isGlobal: Bool

    /// Creates an argument declaration; the static helpers `option`, `flag` and
    /// `positional` read better at call sites.
    public init(
        kind: Kind,
        long: String,
        short: Character? = nil,
        help: String,
        repeatable: Bool = false,
        required: Bool = false,
        defaultValue: String? = nil,
        environmentVariable: String? = nil,
        exclusiveGroup: String? = nil,
        allowedValues: [String]? = nil,
        implicitValue: String? = nil,
        isGlobal: Bool = false
    ) {
        self.kind = kind
        self.long = long
        self.short = short
        self.help = help
        self.repeatable = repeatable
        self.required = required
        self.defaultValue = defaultValue
        self.environmentVariable = environmentVariable
        self.exclusiveGroup = exclusiveGroup
        self.allowedValues = allowedValues
        self.implicitValue = implicitValue
        self.isGlobal = isGlobal
    }

    /// Declares an option that takes a value: `--long VALUE`.
    public static func option(
        _ long: String,
        short: Character? = nil,
        value valueName: String,
        help: String,
        defaultValue: String? = nil,
        environmentVariable: String? = nil,
        allowedValues: [String]? = nil,
        repeatable: Bool = false,
        required: Bool = false,
        exclusiveGroup: String? = nil,
        implicitValue: String? = nil,
        isGlobal: Bool = false
    ) -> ArgumentSpec {
        ArgumentSpec(
            kind: .option(valueName: valueName), long: long, short: short, help: help,
            repeatable: repeatable, required: required, defaultValue: defaultValue,
            environmentVariable: environmentVariable, exclusiveGroup: exclusiveGroup,
            allowedValues: allowedValues, implicitValue: implicitValue, isGlobal: isGlobal
        )
    }

    /// Declares a flag: `--long`. From the environment, `1`, `true`, `yes` and
    /// `on` set it; `0`, `false`, `no`, `off` and the empty string leave it unset.
    public static func flag(
        _ long: String,
        short: Character? = nil,
        help: String,
        environmentVariable: String? = nil,
        exclusiveGroup: String? = nil,
        isGlobal: Bool = false
    ) -> ArgumentSpec {
        ArgumentSpec(
            kind: .flag, long: long, short: short, help: help,
            environmentVariable: environmentVariable, exclusiveGroup: exclusiveGroup,
            isGlobal: isGlobal
        )
    }

    /// Declares a positional argument; `repeatable` makes it take every
    /// remaining word (`ID...`), so it must come last.
    public static func positional(
        _ name: String,
        value valueName: String,
        help: String,
        repeatable: Bool = false,
        required: Bool = true,
        exclusiveGroup: String? = nil
    ) -> ArgumentSpec {
        ArgumentSpec(
            kind: .positional(valueName: valueName), long: name, help: help,
            repeatable: repeatable, required: required, exclusiveGroup: exclusiveGroup
        )
    }
}

extension ArgumentSpec {
    /// Whether this is a positional argument.
    public var isPositional: Bool {
        if case .positional = kind { return true }
        return false
    }

    /// Whether this is a flag.
    public var isFlag: Bool { kind == .flag }

    /// Whether this is an option that takes a value.
    public var isOption: Bool {
        if case .option = kind { return true }
        return false
    }

    /// The value name shown in help (`N`, `URL`, `ID`), or nil for a flag.
    public var valueName: String? {
        switch kind {
        case .option(let name), .positional(let name): return name
        case .flag: return nil
        }
    }

    /// How errors and help name this argument: `--limit` for options and flags,
    /// the value name (`ID`) for positional arguments.
    public var displayName: String {
        switch kind {
        case .option, .flag: return "--" + long
        case .positional(let name): return name
        }
    }
}
