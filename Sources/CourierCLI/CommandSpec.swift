/// The declaration of one command: its name, its documentation, its arguments
/// and its subcommands.
///
/// A command with subcommands is a group (`jobctl dead`): it runs nothing itself,
/// takes no positional arguments, and may only declare global arguments, which
/// every command below it accepts too.
public struct CommandSpec: Sendable {
    /// The word that selects this command (`replay`); for the root, the program name.
    public var name: String
    /// A one-line summary, shown in help and in the parent's command list.
    public var abstract: String
    /// Longer help text. Paragraphs are separated by blank lines and wrapped;
    /// lines that start with a space are kept as written.
    public var discussion: String?
    /// The arguments, in the order help shows them.
    public var arguments: [ArgumentSpec]
    /// Commands below this one.
    public var subcommands: [CommandSpec]
    /// Example invocations, shown verbatim under "Examples:".
    public var examples: [String]
    /// Rules between arguments beyond `exclusiveGroup`.
    public var constraints: [ArgumentConstraint]
    /// For the root command: the text `--version` prints. Nil disables `--version`.
    public var version: String?

    /// Creates a command declaration.
    public init(
        name: String,
        abstract: String,
        discussion: String? = nil,
        arguments: [ArgumentSpec] = [],
        subcommands: [CommandSpec] = [],
        examples: [String] = [],
        constraints: [ArgumentConstraint] = [],
        version: String? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.subcommands = subcommands
        self.examples = examples
        self.constraints = constraints
        self.version = version
    }

    /// Whether this command only groups subcommands.
    public var isGroup: Bool { !subcommands.isEmpty }

    /// The direct subcommand with this name.
    public func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The chain of commands from this one down along `path` (which excludes
    /// this command's own name), or nil when a name does not match.
    public func chain(for path: [String]) -> [CommandSpec]? {
        var chain = [self]
        for name in path {
            guard let next = chain[chain.count - 1].subcommand(named: name) else { return nil }
            chain.append(next)
        }
        return chain
    }

    /// Every command path below this one, depth first in declaration order
    /// (`["dead"]`, `["dead", "list"]`, ...). The root itself is `[]` and comes first.
    public func allPaths() -> [[String]] {
        var result: [[String]] = [[]]
        for sub in subcommands {
            for path in sub.allPaths() {
                result.append([sub.name] + path)
            }
        }
        return result
    }

    /// The paths of runnable (leaf) commands below this one, relative to it.
    public func leafPaths() -> [[String]] {
        allPaths().filter { path in
            guard let last = chain(for: path)?.last else { return false }
            return !last.isGroup
        }
    }
}

/// A rule between several arguments of one command, checked after parsing.
/// Names are long names (or positional keys) without dashes.
public enum ArgumentConstraint: Sendable, Equatable {
    /// At least one of these arguments must be given (on the command line or
    /// through the environment; defaults do not count).
    case atLeastOne(of: [String])
    /// The first argument cannot be combined with any of the others.
    case conflicts(String, with: [String])
}
