import Testing
@testable import CourierCLI

@Suite("Parser: environment fallback")
struct EnvironmentFallbackTests {
    @Test func environmentUsedWhenFlagAbsent() throws {
        let command = try parse(["run"], environment: ["TOOL_TOKEN": "from-env"])
        #expect(command.value("token") == "from-env")
        #expect(command.source(of: "token") == .environment("TOOL_TOKEN"))
        #expect(command.isSpecified("token"))
    }

    @Test func commandLineWins() throws {
        let command = try parse(["run", "--token", "from-flag"], environment: ["TOOL_TOKEN": "from-env"])
        #expect(command.value("token") == "from-flag")
        #expect(command.source(of: "token") == .commandLine)
    }

    @Test func globalOptionFromEnvironment() throws {
        let command = try parse(["dead", "list"], environment: ["DB_URL": "postgres://env"])
        #expect(command.value("database-url") == "postgres://env")
    }

    @Test func emptyVariableCountsAsUnset() throws {
        let command = try parse(["run"], environment: ["TOOL_TOKEN": ""])
        #expect(command.value("token") == nil)
    }

    @Test func unrelatedVariablesIgnored() throws {
        let command = try parse(["run"], environment: ["TOKEN": "x", "tool_token": "y"])
        #expect(command.value("token") == nil)
    }

    @Test(arguments: ["1", "true", "YES", "on"])
    func truthyFlagVariable(_ raw: String) throws {
        #expect(try parse(["run"], environment: ["TOOL_DEBUG": raw]).flag("debug"))
    }

    @Test(arguments: ["0", "false", "No", "off", ""])
    func falsyFlagVariable(_ raw: String) throws {
        let command = try parse(["run"], environment: ["TOOL_DEBUG": raw])
        #expect(!command.flag("debug"))
    }

    @Test func invalidFlagVariableNamesTheVariable() throws {
        let error = try #require(usageError(["run"], environment: ["TOOL_DEBUG": "maybe"]))
        #expect(error.code == .invalidValue)
        #expect(error.description == "error: TOOL_DEBUG: expected true or false (1/0, yes/no, on/off), got 'maybe'")
    }

    @Test func allowedValuesCheckedForEnvironment() throws {
        let error = try #require(usageError(["run"], environment: ["TOOL_MODE": "medium"]))
        #expect(error.field == "TOOL_MODE")
        #expect(error.message.hasPrefix("expected one of fast, slow, got 'medium'"))
    }

    @Test func invalidEnvironmentValueIgnoredWhenFlagGiven() throws {
        let command = try parse(["run", "--mode", "fast"], environment: ["TOOL_MODE": "medium"])
        #expect(command.value("mode") == "fast")
    }

    @Test func typedGetterNamesEnvironmentVariable() throws {
        let command = try parse(["run"], environment: ["TOOL_TOKEN": "abc"])
        let error = try #require(throws: UsageError.self) { try command.int("token", range: 1...Int.max) }
        #expect(error.description == "error: TOOL_TOKEN: expected a positive integer, got 'abc'")
    }

    @Test func flagOfExclusiveGroupSuppressesEnvironmentOfOtherMember() throws {
        let command = try parse(["run", "--right", "r"], environment: ["TOOL_LEFT": "l"])
        #expect(command.value("right") == "r")
        #expect(command.value("left") == nil)
    }

    @Test func twoEnvironmentMembersOfGroupConflict() throws {
        let error = try #require(usageError(["run"], environment: ["TOOL_LEFT": "l", "TOOL_RIGHT": "r"]))
        #expect(error.code == .conflict)
        #expect(error.description == "error: TOOL_RIGHT: cannot be combined with TOOL_LEFT")
    }

    @Test func requiredOptionMessageMentionsVariable() throws {
        let spec = CommandSpec(name: "x", abstract: "X.", arguments: [
            .option("url", value: "URL", help: "U.", environmentVariable: "X_URL", required: true),
        ])
        #expect(throws: UsageError(code: .missingArgument, field: "--url",
                                   message: "missing required option (or set X_URL)", commandPath: ["x"])) {
            try CommandLineParser.parse([], root: spec, environment: [:])
        }
        let result = try CommandLineParser.parse([], root: spec, environment: ["X_URL": "u"])
        guard case .run(let command) = result else {
            Issue.record("expected run")
            return
        }
        #expect(command.value("url") == "u")
    }

    @Test func precedenceCommandLineThenEnvironmentThenDefault() throws {
        let spec = CommandSpec(name: "x", abstract: "X.", arguments: [
            .option("lease", value: "D", help: "L.", defaultValue: "30s", environmentVariable: "X_LEASE"),
        ])
        func lease(_ arguments: [String], _ environment: [String: String]) throws -> (String?, ParsedCommand.Source?) {
            guard case .run(let command) = try CommandLineParser.parse(arguments, root: spec, environment: environment) else {
                return (nil, nil)
            }
            return (command.value("lease"), command.source(of: "lease"))
        }
        #expect(try lease([], [:]) == ("30s", .defaultValue))
        #expect(try lease([], ["X_LEASE": "1m"]) == ("1m", .environment("X_LEASE")))
        #expect(try lease(["--lease", "2m"], ["X_LEASE": "1m"]) == ("2m", .commandLine))
    }
}
