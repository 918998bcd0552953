import Testing
@testable import CourierCLI

@Suite("Parser: usage errors")
struct ParserErrorTests {
    @Test func unknownLongOptionSuggestsClosest() throws {
        let error = try #require(usageError(["run", "--limt", "5"]))
        #expect(error.code == .unknownOption)
        #expect(error.field == "--limt")
        #expect(error.description == "error: --limt: unknown option; did you mean --limit?")
        #expect(error.exitCode == 2)
        #expect(error.commandPath == ["tool", "run"])
        #expect(error.helpHint == "Run 'tool run --help' for usage.")
    }

    @Test func unknownOptionWithoutCloseMatch() throws {
        let error = try #require(usageError(["run", "--zzzzzzzz"]))
        #expect(error.description == "error: --zzzzzzzz: unknown option")
    }

    @Test func unknownOptionPrefixSuggestion() throws {
        let error = try #require(usageError(["run", "--verb"]))
        #expect(error.message == "unknown option; did you mean --verbose?")
    }

    @Test func subcommandOptionGivenBeforeTheSubcommand() throws {
        let error = try #require(usageError(["--reason", "x", "dead", "list"]))
        #expect(error.description == "error: --reason: unknown option for 'tool'; give it after the command's name")
    }

    @Test func unknownShortOption() throws {
        let error = try #require(usageError(["run", "-z"]))
        #expect(error.code == .unknownOption)
        #expect(error.description == "error: -z: unknown option")
    }

    @Test func optionOfAnotherCommandIsUnknown() throws {
        let error = try #require(usageError(["cancel", "--limit", "1", "5"]))
        #expect(error.field == "--limit")
        #expect(error.code == .unknownOption)
    }

    @Test func missingValueAtEnd() throws {
        let error = try #require(usageError(["run", "--limit"]))
        #expect(error.code == .missingValue)
        #expect(error.description == "error: --limit: missing value (expected N)")
    }

    @Test func missingValueBeforeAnotherOption() throws {
        let error = try #require(usageError(["run", "--token", "--json"]))
        #expect(error.code == .missingValue)
        #expect(error.field == "--token")
    }

    @Test func missingValueForShortOption() throws {
        let error = try #require(usageError(["run", "-n"]))
        #expect(error.description == "error: --limit: missing value (expected N)")
    }

    @Test func flagWithValue() throws {
        let error = try #require(usageError(["run", "--json=yes"]))
        #expect(error.code == .unexpectedValue)
        #expect(error.description == "error: --json: takes no value, got 'yes'")
    }

    @Test func nonRepeatableOptionTwice() throws {
        let error = try #require(usageError(["run", "--limit", "1", "--limit", "2"]))
        #expect(error.code == .duplicateOption)
        #expect(error.description == "error: --limit: given more than once")
    }

    @Test func disallowedValueSuggests() throws {
        let error = try #require(usageError(["run", "--jitter", "fulll"]))
        #expect(error.code == .invalidValue)
        #expect(error.description
            == "error: --jitter: expected one of full, equal, decorrelated, none, got 'fulll'; did you mean full?")
    }

    @Test func exclusiveGroupViolation() throws {
        let error = try #require(usageError(["run", "--run-at", "now", "--in", "5m"]))
        #expect(error.code == .conflict)
        #expect(error.description == "error: --in: cannot be combined with --run-at")
    }

    @Test func exclusiveGroupWithPositional() throws {
        let error = try #require(usageError(["dead", "replay", "1", "--all"]))
        #expect(error.description == "error: --all: cannot be combined with ID")
    }

    @Test func conflictsConstraint() throws {
        let error = try #require(usageError(["dead", "replay", "--reason", "x", "--all"]))
        #expect(error.code == .conflict)
        #expect(error.description == "error: --all: cannot be combined with --reason")
    }

    @Test func atLeastOneConstraint() throws {
        let error = try #require(usageError(["dead", "replay"]))
        #expect(error.code == .missingArgument)
        #expect(error.description == "error: expected one of ID..., --all, --reason")
    }

    @Test func missingRequiredOption() throws {
        let error = try #require(usageError(["pair", "a"]))
        #expect(error.code == .missingArgument)
        #expect(error.description == "error: --url: missing required option")
    }

    @Test func missingRequiredPositional() throws {
        let error = try #require(usageError(["cancel"]))
        #expect(error.code == .missingArgument)
        #expect(error.description == "error: ID: missing argument")
    }

    @Test func unexpectedPositional() throws {
        let error = try #require(usageError(["pair", "a", "b", "c", "--url", "u"]))
        #expect(error.code == .unexpectedArgument)
        #expect(error.description == "error: unexpected argument 'c'")
    }

    @Test func positionalOnCommandWithoutAny() throws {
        let error = try #require(usageError(["run", "extra"]))
        #expect(error.description == "error: unexpected argument 'extra'")
    }

    @Test func unknownSubcommandSuggests() throws {
        let error = try #require(usageError(["dead", "replya"]))
        #expect(error.code == .unknownCommand)
        #expect(error.description == "error: unknown command 'replya' for 'tool dead'; did you mean 'replay'?")
        #expect(error.exitCode == 2)
    }

    @Test func missingSubcommand() throws {
        let error = try #require(usageError(["dead"]))
        #expect(error.code == .missingCommand)
        #expect(error.description == "error: missing command for 'tool dead'; expected one of list, replay")
    }

    @Test func wordsAfterDoubleDashAtGroup() throws {
        let error = try #require(usageError(["dead", "--", "list"]))
        #expect(error.code == .unexpectedArgument)
    }

    @Test func negativeNumberWhereNoValueExpected() throws {
        let error = try #require(usageError(["cancel", "-5"]))
        #expect(error.code == .unknownOption)
        #expect(error.field == "-5")
    }

    @Test func helpForUnknownCommand() throws {
        let error = try #require(usageError(["help", "dead", "replya"]))
        #expect(error.code == .unknownCommand)
        #expect(error.message == "unknown command 'replya' for 'tool dead'; did you mean 'replay'?")
    }

    @Test func helpForTooManyWords() throws {
        let error = try #require(usageError(["help", "run", "more"]))
        #expect(error.code == .unknownCommand)
        #expect(error.message == "unknown command 'more'")
    }

    @Test func everyErrorExitsTwo() {
        let cases: [[String]] = [
            ["run", "--bogus"], ["run", "--limit"], ["run", "--json=1"], ["run", "-n", "1", "-n", "2"],
            ["run", "--mode", "medium"], ["run", "--in", "1s", "--run-at", "now"], ["dead"], ["nope"],
            ["cancel"], ["pair", "a"],
        ]
        for arguments in cases {
            #expect(usageError(arguments)?.exitCode == 2, "\(arguments)")
        }
    }

    @Test func customUsageErrorFromCommand() throws {
        let command = try parse(["run", "--header", "nocolon"])
        let error = command.invalid("header", "expected 'Name: value', got 'nocolon'")
        #expect(error.description == "error: --header: expected 'Name: value', got 'nocolon'")
        #expect(error.code == .invalidValue)
        #expect(error.commandPath == ["tool", "run"])
    }
}
