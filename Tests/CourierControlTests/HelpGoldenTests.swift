import CourierCLI
import CourierControl
import CourierCore
import Foundation
import Testing

/// `jobctl` help text, compared with the files in `Golden/`. After changing a
/// declaration on purpose, run `COURIER_UPDATE_GOLDEN=1 swift test --filter
/// HelpGoldenTests` to rewrite them, and review the diff before committing.
@Suite("jobctl help golden files")
struct HelpGoldenTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    /// Every command and group, as the path below the root.
    static let paths = JobctlCommands.root.allPaths()

    static func fileName(_ path: [String]) -> String {
        (["jobctl"] + path).joined(separator: "-") + ".txt"
    }

    static func help(_ arguments: [String]) throws -> String {
        let result = try CommandLineParser.parse(arguments, root: JobctlCommands.root, environment: [:])
        guard case .help(let text) = result else {
            throw GoldenFailure(message: "expected help for \(arguments), got \(result)")
        }
        return text
    }

    @Test(arguments: paths)
    func helpMatchesGoldenFile(_ path: [String]) throws {
        let text = try Self.help(path.isEmpty ? ["help"] : path + ["--help"])
        try GoldenFile.check(text + "\n", against: Self.directory.appendingPathComponent(Self.fileName(path)))
    }

    @Test(arguments: paths)
    func everyWayOfAskingGivesTheSameHelp(_ path: [String]) throws {
        let viaFlag = try Self.help(path + ["--help"])
        #expect(try Self.help(["help"] + path) == viaFlag)
        #expect(try Self.help(path + ["-h"]) == viaFlag)
        #expect(try Self.help(["--database-url", "postgres://x"] + path + ["--help"]) == viaFlag)
    }

    @Test func noStaleGoldenFiles() throws {
        let expected = Set(Self.paths.map(Self.fileName))
        let present = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".txt") }
        #expect(Set(present) == expected)
    }

    @Test func helpFitsEightyColumns() throws {
        for path in Self.paths {
            for line in try Self.help(path + ["--help"]).split(separator: "\n") {
                #expect(line.count <= 80, "\(path): \(line)")
                #expect(!line.hasSuffix(" "), "\(path): trailing space in '\(line)'")
            }
        }
    }
}

@Suite("jobctl declarations")
struct JobctlCommandsTests {
    func parse(_ arguments: [String], environment: [String: String] = [:]) throws -> ParsedCommand {
        let result = try CommandLineParser.parse(arguments, root: JobctlCommands.root, environment: environment)
        guard case .run(let command) = result else {
            throw GoldenFailure(message: "expected a command for \(arguments), got \(result)")
        }
        return command
    }

    func usageError(_ arguments: [String]) -> UsageError? {
        do {
            _ = try CommandLineParser.parse(arguments, root: JobctlCommands.root, environment: [:])
            Issue.record("expected a usage error for \(arguments)")
            return nil
        } catch {
            return error
        }
    }

    @Test func declarationIsSound() {
        #expect(JobctlCommands.root.validationProblems() == [])
    }

    /// Every command and flag named in CONTRACT.md and the issues.
    @Test(arguments: [
        (["migrate"], ["print", "json"]),
        (["enqueue"], ["url", "ndjson", "method", "header", "data", "queue", "priority", "run-at", "in",
                       "max-attempts", "deadline", "within", "idempotency-key", "unique-key",
                       "no-idempotency-key", "destination", "timeout", "expect-content-type", "json"]),
        (["list"], ["state", "queue", "destination", "limit", "after", "json"]),
        (["retry"], ["ids", "json"]),
        (["update"], ["id", "run-at", "priority", "json"]),
        (["show"], ["id", "json"]),
        (["cancel"], ["ids", "json"]),
        (["stats"], ["watch", "interval", "json"]),
        (["dead", "list"], ["reason", "destination", "queue", "class", "status", "since", "until", "id", "limit", "json"]),
        (["dead", "show"], ["id", "json"]),
        (["dead", "replay"], ["ids", "all", "reason", "destination", "queue", "class", "status", "since", "until",
                              "dry-run", "rate", "force", "json"]),
        (["dead", "purge"], ["ids", "older-than", "json"]),
        (["breakers"], ["json"]),
        (["breaker", "open"], ["destination"]),
        (["breaker", "close"], ["destination"]),
        (["breaker", "reset"], ["destination"]),
        (["workers"], ["json"]),
        (["devdb", "start"], ["dir", "port"]),
        (["devdb", "stop"], ["dir"]),
        (["devdb", "status"], ["dir"]),
    ])
    func contractNamesAreDeclared(_ path: [String], _ names: [String]) throws {
        let chain = try #require(JobctlCommands.root.chain(for: path))
        let declared = (chain.dropLast().flatMap { $0.arguments.filter(\.isGlobal) } + chain[chain.count - 1].arguments)
            .map(\.long)
        for name in names + ["database-url"] {
            #expect(declared.contains(name), "\(path) lacks \(name)")
        }
    }

    @Test func enqueueAsTheContractWritesIt() throws {
        let command = try parse([
            "enqueue", "--url", "https://example.com/hook", "--method", "PUT",
            "--header", "Content-Type: application/json", "--header", "X-A: b", "--data", "@body.json",
            "--queue", "q", "--priority", "-3", "--in", "5m", "--max-attempts", "7", "--within", "2h",
            "--idempotency-key", "k1", "--unique-key", "u1", "--destination", "https://example.com:443",
            "--timeout", "250ms", "--expect-content-type", "application/json", "--json",
        ])
        #expect(command.path == ["enqueue"])
        #expect(command.values("header") == ["Content-Type: application/json", "X-A: b"])
        #expect(try command.int("priority") == -3)
        #expect(try command.duration("in") == .seconds(300))
        #expect(try command.duration("within") == .seconds(7200))
        #expect(try command.duration("timeout") == .milliseconds(250))
        #expect(command.value("run-at") == nil)
        #expect(command.flag("json"))
    }

    @Test func enqueueDefaults() throws {
        let command = try parse(["enqueue", "--url", "https://example.com"])
        #expect(command.value("method") == "POST")
        #expect(command.value("queue") == "default")
        #expect(command.value("priority") == "0")
        #expect(command.value("max-attempts") == String(JobDefaults.maxAttempts))
        #expect(!command.flag("no-idempotency-key"))
    }

    @Test func ndjsonFromFileOrStandardInput() throws {
        #expect(try parse(["enqueue", "--ndjson", "jobs.ndjson"]).value("ndjson") == "jobs.ndjson")
        #expect(try parse(["enqueue", "--ndjson", "-"]).value("ndjson") == "-")
        #expect(try parse(["enqueue", "--ndjson"]).value("ndjson") == "-")
    }

    @Test(arguments: [
        (["enqueue", "--url", "u", "--run-at", "now", "--in", "5m"], "error: --in: cannot be combined with --run-at"),
        (["enqueue", "--url", "u", "--within", "1h", "--deadline", "now"],
         "error: --deadline: cannot be combined with --within"),
        (["enqueue", "--url", "u", "--idempotency-key", "k", "--no-idempotency-key"],
         "error: --no-idempotency-key: cannot be combined with --idempotency-key"),
        (["enqueue", "--url", "u", "--ndjson", "f"], "error: --ndjson: cannot be combined with --url"),
        (["enqueue", "--ndjson", "f", "--method", "GET"], "error: --method: cannot be combined with --ndjson"),
        (["enqueue"], "error: expected one of --url, --ndjson"),
        (["enqueue", "--url", "u", "--qeue", "q"], "error: --qeue: unknown option; did you mean --queue?"),
        (["list", "--state", "done"],
         "error: --state: expected one of available, running, succeeded, dead, all, got 'done'"),
        (["dead", "list", "--reason", "exausted"],
         "error: --reason: expected one of permanent, invalid_response, exhausted, deadline, ambiguous, cancelled, got 'exausted'; did you mean exhausted?"),
        (["dead", "replay"],
         "error: expected one of ID..., --all, --reason, --destination, --queue, --class, --status, --since, --until"),
        (["dead", "replay", "--all", "--reason", "deadline"], "error: --reason: cannot be combined with --all"),
        (["dead", "replay", "3", "--all"], "error: --all: cannot be combined with ID"),
        (["dead", "purge"], "error: expected one of ID..., --older-than"),
        (["dead", "purge", "1", "--older-than", "7d"], "error: --older-than: cannot be combined with ID"),
        (["show"], "error: ID: missing argument"),
        (["show", "1", "2"], "error: unexpected argument '2'"),
        (["cancel"], "error: expected one of ID..., --queue, --destination, --kind, --url-prefix, --fairness-key, --since, --until"),
        (["retry"], "error: ID: missing argument"),
        (["update", "1"], "error: expected one of --run-at, --in, --priority"),
        (["breaker", "open"], "error: DESTINATION: missing argument"),
        (["breaker", "opne", "x"], "error: unknown command 'opne' for 'jobctl breaker'; did you mean 'open'?"),
        (["dead"], "error: missing command for 'jobctl dead'; expected one of list, show, replay, purge"),
        (["enqeue"], "error: unknown command 'enqeue' for 'jobctl'; did you mean 'enqueue'?"),
    ])
    func badUsageNamesTheFlag(_ arguments: [String], _ expected: String) throws {
        let error = try #require(usageError(arguments))
        #expect(error.description == expected)
        #expect(error.exitCode == 2)
    }

    @Test func deadReplayForms() throws {
        let paced = try parse(["dead", "replay", "--destination", "https://a:443", "--since", "-12h", "--rate", "20"])
        #expect(try paced.rate("rate")?.perSecond == 20)
        #expect(paced.values("destination") == ["https://a:443"])
        let byIds = try parse(["dead", "replay", "4", "5", "--dry-run", "--force"])
        #expect(try byIds.ints("ids") == [4, 5])
        #expect(byIds.flag("dry-run") && byIds.flag("force"))
        #expect(try parse(["dead", "replay", "--all"]).flag("all"))
    }

    @Test func databaseURLFromEnvironmentOrFlag() throws {
        let environment = ["DATABASE_URL": "postgresql://env/db"]
        #expect(try parse(["workers"], environment: environment).value("database-url") == "postgresql://env/db")
        let flagged = try parse(["--database-url", "postgresql://flag/db", "workers"], environment: environment)
        #expect(flagged.value("database-url") == "postgresql://flag/db")
        #expect(try parse(["workers"]).value("database-url") == nil)
    }

    @Test func devdbOptions() throws {
        let started = try parse(["devdb", "--dir", "/tmp/x", "start", "--port", "6000"])
        #expect(started.value("dir") == "/tmp/x")
        #expect(try started.int("port", range: 1...65535) == 6000)
        // No --dir: the command falls back to COURIER_DEVDB_DIR, then /tmp/courier-devdb-UID.
        #expect(try parse(["devdb", "stop"]).value("dir") == nil)
        #expect(try parse(["devdb", "stop"]).int("port", range: 1...65535) == 25432)
        #expect(try parse(["devdb", "stop"], environment: ["COURIER_DEVDB_DIR": "/tmp/d"]).value("dir") == "/tmp/d")
    }
}

/// Compares text with a golden file, or rewrites the file when
/// `COURIER_UPDATE_GOLDEN=1`.
enum GoldenFile {
    static let updating = ProcessInfo.processInfo.environment["COURIER_UPDATE_GOLDEN"] == "1"

    static func check(_ actual: String, against file: URL) throws {
        if updating {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try actual.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        guard let expected = try? String(contentsOf: file, encoding: .utf8) else {
            Issue.record("missing golden file \(file.path); run with COURIER_UPDATE_GOLDEN=1 to create it")
            return
        }
        if actual != expected {
            let actualLines = actual.components(separatedBy: "\n")
            let expectedLines = expected.components(separatedBy: "\n")
            let line = zip(actualLines, expectedLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(actualLines.count, expectedLines.count)
            let want = line < expectedLines.count ? expectedLines[line] : "<end of file>"
            let got = line < actualLines.count ? actualLines[line] : "<end of text>"
            Issue.record("""
                \(file.lastPathComponent) differs at line \(line + 1):
                  golden: \(want)
                  actual: \(got)
                Run COURIER_UPDATE_GOLDEN=1 swift test --filter HelpGoldenTests to update, then review the diff.
                """)
        }
    }
}

struct GoldenFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
