import Foundation

extension CommandLineParser {
    /// The entry point for executables: parses the process's arguments; prints
    /// help or version text to standard output and exits 0; prints a usage error
    /// and a pointer to the help to standard error and exits 2. Otherwise
    /// returns the command to run.
    public static func parseOrExit(
        root: CommandSpec,
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> ParsedCommand {
        do {
            switch try parse(arguments, root: root, environment: environment) {
            case .run(let command):
                return command
            case .help(let text), .version(let text):
                print(text)
                exit(0)
            }
        } catch {
            exitWithUsageError(error)
        }
    }

    /// Prints `error` (and its help hint) to standard error and exits with its
    /// exit code (2). For commands that find bad input after parsing.
    public static func exitWithUsageError(_ error: UsageError) -> Never {
        var text = error.description + "\n"
        if let hint = error.helpHint { text += hint + "\n" }
        FileHandle.standardError.write(Data(text.utf8))
        exit(error.exitCode)
    }
}
