import CourierCLI
import CourierCore
import CourierWorker
import Foundation
import Testing

@Suite("jobworker declaration")
struct JobworkerCommandTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let updating = ProcessInfo.processInfo.environment["COURIER_UPDATE_GOLDEN"] == "1"

    func parse(_ arguments: [String], environment: [String: String] = [:]) throws -> ParsedCommand {
        let result = try CommandLineParser.parse(arguments, root: JobworkerCommand.spec, environment: environment)
        guard case .run(let command) = result else {
            throw UsageError(code: .invalidValue, field: "test", message: "expected a command, got \(result)", commandPath: [])
        }
        return command
    }

    /// `jobworker --help`, compared with `Golden/jobworker.txt`. Run
    /// `COURIER_UPDATE_GOLDEN=1 swift test --filter JobworkerCommandTests` to
    /// rewrite it after an intended change, and review the diff.
    @Test func helpMatchesGoldenFile() throws {
        let result = try CommandLineParser.parse(["--help"], root: JobworkerCommand.spec, environment: [:])
        guard case .help(let text) = result else {
            Issue.record("expected help, got \(result)")
            return
        }
        let file = Self.directory.appendingPathComponent("jobworker.txt")
        if Self.updating {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try (text + "\n").write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let golden = try String(contentsOf: file, encoding: .utf8)
        #expect(text + "\n" == golden, "jobworker help differs from Golden/jobworker.txt; run with COURIER_UPDATE_GOLDEN=1 and review the diff")
        #expect(try CommandLineParser.parse(["-h"], root: JobworkerCommand.spec, environment: [:]).helpText == text)
    }

    @Test func declarationIsSound() {
        #expect(JobworkerCommand.spec.validationProblems() == [])
    }

    /// Defaults, ranges and value lists come from the configuration and the enums.
    @Test func defaultsAndValueListsAreDerived() throws {
        let defaults = try WorkerConfiguration(command: parse([]), environment: [:])
        let d = WorkerConfiguration.defaults
        #expect(defaults.concurrency == d.concurrency && defaults.lease == d.lease && defaults.retention == d.retention)
        #expect(defaults.retryPolicy == d.retryPolicy && defaults.breakerPolicy == d.breakerPolicy)
        #expect(defaults.queues == d.queues && defaults.pollInterval == d.pollInterval && defaults.claimBatch == d.claimBatch)
        // Jobs run on the worker's own threads, in the Swift API and in jobworker alike.
        #expect(d.jobThreads == .own && defaults.jobThreads == .own)
        let arguments = JobworkerCommand.spec.arguments
        func spec(_ name: String) throws -> ArgumentSpec { try #require(arguments.first { $0.long == name }) }
        #expect(try spec("backoff").allowedValues == BackoffPolicy.Strategy.allCases.map(\.rawValue))
        #expect(try spec("jitter").allowedValues == BackoffPolicy.Jitter.allCases.map(\.rawValue))
        #expect(try spec("log-format").allowedValues == Logger.Format.allCases.map(\.rawValue))
        #expect(try spec("log-level").allowedValues == Logger.Level.allCases.map(\.flagName))
        #expect(try spec("lease").defaultValue == DurationParser.format(d.lease))
        // A value the configuration's bounds refuse is refused on the command line, naming the flag.
        let low = String(WorkerConfiguration.Bounds.concurrency.lowerBound - 1)
        let error = #expect(throws: UsageError.self) { try WorkerConfiguration(command: parse(["--concurrency", low]), environment: [:]) }
        #expect(error?.field == "--concurrency")
        let configured = try WorkerConfiguration(command: parse(["--lease", "1.5s", "--backoff", "linear", "--jitter", "none",
                                                                 "--breaker-window", "1m30s"]), environment: [:])
        #expect(configured.lease == .milliseconds(1500))
        #expect(configured.retryPolicy.backoff.strategy == .linear && configured.retryPolicy.backoff.jitter == .none)
        #expect(configured.breakerPolicy.window == .seconds(90))
    }

    @Test func contractFlagsAreDeclaredWithEnvironmentVariables() throws {
        let contract = [
            "queues", "concurrency", "lease", "shutdown-grace", "backoff-base", "backoff-cap", "jitter",
            "retry-after-cap", "breaker-failures", "breaker-window", "breaker-cooldown", "breaker-cooldown-max",
            "metrics-addr", "allow-private-networks", "backoff", "log-format", "log-level", "poll-interval",
            "retention",
        ]
        let arguments = JobworkerCommand.spec.arguments
        for name in contract {
            let spec = try #require(arguments.first { $0.long == name }, "missing --\(name)")
            #expect(spec.environmentVariable == JobworkerCommand.environmentVariable(for: name))
        }
        #expect(arguments.first { $0.long == "database-url" }?.environmentVariable == "DATABASE_URL")
        for spec in arguments where spec.long != "database-url" {
            #expect(spec.environmentVariable?.hasPrefix("COURIER_") == true, "--\(spec.long)")
        }
        #expect(JobworkerCommand.environmentVariable(for: "breaker-failures") == "COURIER_BREAKER_FAILURES")
    }

    @Test func documentedDefaults() throws {
        let command = try parse([])
        #expect(try command.list("queues") == ["default"])
        #expect(try command.int("concurrency", range: 1...Int.max) == 32)
        #expect(try command.duration("lease") == .seconds(30))
        #expect(try command.duration("shutdown-grace") == .seconds(25))
        #expect(try command.duration("poll-interval") == .seconds(1))
        #expect(command.value("backoff") == "exponential")
        #expect(try command.duration("backoff-base") == .seconds(1))
        #expect(try command.duration("backoff-cap") == .seconds(3600))
        #expect(command.value("jitter") == "full")
        #expect(try command.duration("retry-after-cap") == .seconds(3600))
        #expect(try command.int("breaker-failures", range: 1...Int.max) == 5)
        #expect(try command.duration("breaker-window") == .seconds(60))
        #expect(try command.duration("breaker-cooldown") == .seconds(30))
        #expect(try command.duration("breaker-cooldown-max") == .seconds(600))
        #expect(try command.duration("retention") == .seconds(86_400))
        #expect(command.value("log-format") == "logfmt")
        #expect(command.value("log-level") == "info")
        #expect(command.value("metrics-addr") == nil)
        #expect(!command.flag("allow-private-networks"))
    }

    @Test func everyDefaultDurationParses() {
        let durations = JobworkerCommand.spec.arguments.filter { $0.valueName == "DURATION" }
        for spec in durations {
            guard let value = spec.defaultValue else {
                // Only optional features may go without a default.
                #expect(["dead-letter-retention"].contains(spec.long), "--\(spec.long) has no default")
                continue
            }
            #expect((try? DurationParser.parse(value, field: spec.long)) != nil, "--\(spec.long)")
        }
        #expect(durations.count >= 10)
    }

    @Test func environmentFallbackAndPrecedence() throws {
        let environment = [
            "COURIER_CONCURRENCY": "64", "COURIER_JITTER": "equal", "COURIER_ALLOW_PRIVATE_NETWORKS": "true",
            "DATABASE_URL": "postgresql://env/db",
        ]
        let fromEnvironment = try parse([], environment: environment)
        #expect(try fromEnvironment.int("concurrency") == 64)
        #expect(fromEnvironment.value("jitter") == "equal")
        #expect(fromEnvironment.flag("allow-private-networks"))
        #expect(fromEnvironment.value("database-url") == "postgresql://env/db")
        let flagged = try parse(["--concurrency", "8", "--jitter=none"], environment: environment)
        #expect(try flagged.int("concurrency") == 8)
        #expect(flagged.value("jitter") == "none")
    }

    @Test func badValuesNameTheFlagOrVariable() throws {
        #expect(throws: UsageError(
            code: .invalidValue, field: "--backoff",
            message: "expected one of exponential, linear, constant, got 'expo'; did you mean exponential?",
            commandPath: ["jobworker"])) {
            try CommandLineParser.parse(["--backoff", "expo"], root: JobworkerCommand.spec, environment: [:])
        }
        let command = try parse([], environment: ["COURIER_LEASE": "30"])
        let error = try #require(throws: UsageError.self) { try command.duration("lease") }
        #expect(error.description == "error: COURIER_LEASE: expected a duration like 250ms, 30s, 5m, 2h or 1h30m, got '30'")
        let badEnum = try #require(throws: UsageError.self) {
            try CommandLineParser.parse([], root: JobworkerCommand.spec, environment: ["COURIER_LOG_FORMAT": "xml"])
        }
        #expect(badEnum.field == "COURIER_LOG_FORMAT")
    }
}

extension ParseResult {
    var helpText: String? {
        if case .help(let text) = self { return text }
        return nil
    }
}
