import CourierCore
import CourierStore
import Foundation

/// Where a jobctl command reads and writes; tests pass their own.
public struct ControlIO: Sendable {
    public var environment: [String: String]
    public var writeOut: @Sendable (String) -> Void
    public var writeErr: @Sendable (String) -> Void
    /// Reads all of standard input (for `--ndjson -` and `--data @-`).
    public var readStandardInput: @Sendable () -> Data
    /// Whether standard error is a terminal (progress is shown only there).
    public var isTerminal: Bool
    /// Whether standard output is a terminal (`stats --watch` draws in place only there).
    public var outputIsTerminal: Bool = false
    /// The terminal's size, rows and columns (TIOCGWINSZ), when standard output is one.
    public var terminalSize: @Sendable () -> TerminalSize? = { nil }

    public init(environment: [String: String], writeOut: @escaping @Sendable (String) -> Void,
                writeErr: @escaping @Sendable (String) -> Void, readStandardInput: @escaping @Sendable () -> Data,
                isTerminal: Bool) {
        self.environment = environment
        self.writeOut = writeOut
        self.writeErr = writeErr
        self.readStandardInput = readStandardInput
        self.isTerminal = isTerminal
    }

    /// The process's real standard streams and environment.
    public static var process: ControlIO {
        var io = ControlIO(
            environment: ProcessInfo.processInfo.environment,
            writeOut: { FileHandle.standardOutput.write(Data($0.utf8)) },
            writeErr: { FileHandle.standardError.write(Data($0.utf8)) },
            readStandardInput: { FileHandle.standardInput.readDataToEndOfFile() },
            isTerminal: isatty(STDERR_FILENO) == 1
        )
        io.outputIsTerminal = isatty(STDOUT_FILENO) == 1
        io.terminalSize = { TerminalSize.ofStandardOutput() }
        return io
    }

    /// The same streams, treated as not a terminal (no progress display).
    var withoutTerminal: ControlIO {
        var io = self
        io.isTerminal = false
        return io
    }

    /// Prints human-readable text, every control character escaped but the line breaks
    /// (see `Quoting.printableLines`). JSON goes through ``printJSON(_:)`` instead.
    func print(_ line: String) { writeOut(Quoting.printableLines(line) + "\n") }

    /// Writes a message to standard error, escaped as ``print(_:)`` escapes.
    func printError(_ text: String) { writeErr(Quoting.printableLines(text)) }

    /// Prints a value as pretty, key-sorted JSON.
    func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Milliseconds matter (paced run_at times): `.iso8601` would drop them.
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        // Not through print(): JSON escapes C0 itself, and its other characters must stay exact.
        writeOut(String(decoding: try encoder.encode(value), as: UTF8.self) + "\n")
    }
}
