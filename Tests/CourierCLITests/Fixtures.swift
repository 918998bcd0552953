import Testing
@testable import CourierCLI

/// A small command tree exercising every feature of the parser.
enum Fixtures {
    static let root = CommandSpec(
        name: "tool",
        abstract: "A tool for tests.",
        discussion: "First paragraph of the discussion.\n\nSecond paragraph.",
        arguments: [
            .option("database-url", value: "URL", help: "Where the database is.",
                    environmentVariable: "DB_URL", isGlobal: true),
        ],
        subcommands: [run, cancel, pair, dead],
        version: "tool 1.2.3"
    )

    static let run = CommandSpec(
        name: "run",
        abstract: "Run something.",
        arguments: [
            .option("limit", short: "n", value: "N", help: "How many.", defaultValue: "10"),
            .option("header", short: "H", value: "'NAME: VALUE'", help: "A header.", repeatable: true),
            .option("jitter", value: "MODE", help: "Jitter mode.", defaultValue: "full",
                    allowedValues: ["full", "equal", "decorrelated", "none"]),
            .option("run-at", value: "TIME", help: "When.", exclusiveGroup: "start"),
            .option("in", value: "DURATION", help: "After how long.", exclusiveGroup: "start"),
            .option("ndjson", value: "FILE", help: "Bulk input.", implicitValue: "-"),
            .option("priority", value: "N", help: "Priority.", defaultValue: "0"),
            .flag("verbose", short: "v", help: "Talk more."),
            .flag("quiet", short: "q", help: "Talk less."),
            .flag("json", help: "JSON output."),
            .option("token", value: "TOKEN", help: "A token.", environmentVariable: "TOOL_TOKEN"),
            .option("mode", value: "MODE", help: "A mode.", environmentVariable: "TOOL_MODE",
                    allowedValues: ["fast", "slow"]),
            .flag("debug", help: "Debug.", environmentVariable: "TOOL_DEBUG"),
            .option("lease", value: "DURATION", help: "Lease.", defaultValue: "30s"),
            .option("left", value: "X", help: "Left side.", environmentVariable: "TOOL_LEFT", exclusiveGroup: "side"),
            .option("right", value: "X", help: "Right side.", environmentVariable: "TOOL_RIGHT", exclusiveGroup: "side"),
            .option("rate", value: "RATE", help: "Pace."),
            .option("queues", value: "LIST", help: "Queues.", defaultValue: "default"),
            .option("at", value: "TIME", help: "A time."),
            .option("ratio", value: "X", help: "A ratio."),
        ]
    )

    static let cancel = CommandSpec(
        name: "cancel",
        abstract: "Cancel things.",
        arguments: [.positional("ids", value: "ID", help: "Ids.", repeatable: true)]
    )

    static let pair = CommandSpec(
        name: "pair",
        abstract: "Take a source and an optional target.",
        arguments: [
            .positional("source", value: "SRC", help: "Source."),
            .positional("target", value: "DST", help: "Target.", required: false),
            .option("url", value: "URL", help: "A required URL.", required: true),
        ]
    )

    static let dead = CommandSpec(
        name: "dead",
        abstract: "Dead things.",
        subcommands: [
            CommandSpec(name: "list", abstract: "List dead things.",
                        arguments: [.option("reason", value: "R", help: "Reason.", repeatable: true)]),
            CommandSpec(
                name: "replay",
                abstract: "Replay dead things.",
                arguments: [
                    .positional("ids", value: "ID", help: "Ids.", repeatable: true, required: false,
                                exclusiveGroup: "selection"),
                    .flag("all", help: "Everything.", exclusiveGroup: "selection"),
                    .option("reason", value: "R", help: "Reason filter."),
                ],
                constraints: [
                    .atLeastOne(of: ["ids", "all", "reason"]),
                    .conflicts("all", with: ["reason"]),
                ]),
        ]
    )
}

/// Parses and expects a runnable command.
func parse(_ arguments: [String], environment: [String: String] = [:]) throws -> ParsedCommand {
    let result = try CommandLineParser.parse(arguments, root: Fixtures.root, environment: environment)
    guard case .run(let command) = result else {
        throw FixtureFailure(message: "expected a command to run, got \(result)")
    }
    return command
}

/// Parses and expects a usage error.
func usageError(_ arguments: [String], environment: [String: String] = [:]) -> UsageError? {
    do {
        let result = try CommandLineParser.parse(arguments, root: Fixtures.root, environment: environment)
        Issue.record("expected a usage error for \(arguments), got \(result)")
        return nil
    } catch {
        return error
    }
}

/// Parses and expects help text.
func helpText(_ arguments: [String]) throws -> String {
    let result = try CommandLineParser.parse(arguments, root: Fixtures.root, environment: [:])
    guard case .help(let text) = result else {
        throw FixtureFailure(message: "expected help, got \(result)")
    }
    return text
}

struct FixtureFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
