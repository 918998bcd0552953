import Testing
@testable import CourierCLI

@Suite("Parser: accepted forms")
struct ParserFormsTests {
    @Test func longOptionWithSeparateValue() throws {
        let command = try parse(["run", "--limit", "5"])
        #expect(command.path == ["run"])
        #expect(command.commandPath == ["tool", "run"])
        #expect(command.value("limit") == "5")
        #expect(command.source(of: "limit") == .commandLine)
    }

    @Test func longOptionWithEquals() throws {
        let command = try parse(["run", "--limit=7", "--token=a=b"])
        #expect(command.value("limit") == "7")
        #expect(command.value("--token") == "a=b")
    }

    @Test func equalsAllowsEmptyAndDashValues() throws {
        let command = try parse(["run", "--token=", "--at=--weird"])
        #expect(command.value("token") == "")
        #expect(command.value("at") == "--weird")
    }

    @Test func shortOptionSeparateAndAttached() throws {
        #expect(try parse(["run", "-n", "5"]).value("limit") == "5")
        #expect(try parse(["run", "-n5"]).value("limit") == "5")
        #expect(try parse(["run", "-n=6"]).value("limit") == "6")
    }

    @Test func bundledShortFlags() throws {
        let command = try parse(["run", "-vq"])
        #expect(command.flag("verbose"))
        #expect(command.flag("quiet"))
    }

    @Test func bundledFlagsEndingWithOption() throws {
        let command = try parse(["run", "-vn", "3"])
        #expect(command.flag("verbose"))
        #expect(command.value("limit") == "3")
    }

    @Test func flagsAbsentAndPresent() throws {
        let command = try parse(["run", "--json"])
        #expect(command.flag("json"))
        #expect(command.flag("--json"))
        #expect(!command.flag("verbose"))
        #expect(command.source(of: "verbose") == nil)
    }

    @Test func repeatedFlagIsHarmless() throws {
        #expect(try parse(["run", "--json", "--json"]).flag("json"))
    }

    @Test func negativeNumberIsAValue() throws {
        let command = try parse(["run", "--priority", "-5"])
        #expect(try command.int("priority") == -5)
    }

    @Test func repeatedOptionKeepsEveryValueInOrder() throws {
        let command = try parse(["run", "--header", "A: 1", "-H", "B: 2", "--header=C: 3"])
        #expect(command.values("header") == ["A: 1", "B: 2", "C: 3"])
        #expect(command.value("header") == "C: 3")
    }

    @Test func optionsAndPositionalsInterleave() throws {
        let command = try parse(["cancel", "1", "2", "3"])
        #expect(command.positionals("ids") == ["1", "2", "3"])
        #expect(try command.ints("ids", range: 1...Int.max) == [1, 2, 3])
    }

    @Test func doubleDashEndsOptions() throws {
        let command = try parse(["cancel", "1", "--", "--json", "-5"])
        #expect(command.positionals("ids") == ["1", "--json", "-5"])
    }

    @Test func positionalsFillInOrder() throws {
        let both = try parse(["pair", "a", "b", "--url", "u"])
        #expect(both.positionals("source") == ["a"])
        #expect(both.positionals("target") == ["b"])
        let one = try parse(["pair", "--url", "u", "a"])
        #expect(one.positionals("source") == ["a"])
        #expect(one.positionals("target").isEmpty)
    }

    @Test func subcommandTree() throws {
        let command = try parse(["dead", "list", "--reason", "exhausted"])
        #expect(command.path == ["dead", "list"])
        #expect(command.values("reason") == ["exhausted"])
    }

    @Test func globalOptionBeforeOrAfterSubcommand() throws {
        let before = try parse(["--database-url", "postgres://a", "dead", "list"])
        #expect(before.value("database-url") == "postgres://a")
        let after = try parse(["dead", "list", "--database-url=postgres://b"])
        #expect(after.value("database-url") == "postgres://b")
        let between = try parse(["dead", "--database-url", "postgres://c", "list"])
        #expect(between.value("database-url") == "postgres://c")
    }

    @Test func optionalValueOption() throws {
        #expect(try parse(["run", "--ndjson"]).value("ndjson") == "-")
        #expect(try parse(["run", "--ndjson", "-"]).value("ndjson") == "-")
        #expect(try parse(["run", "--ndjson", "jobs.ndjson"]).value("ndjson") == "jobs.ndjson")
        #expect(try parse(["run", "--ndjson=x.ndjson"]).value("ndjson") == "x.ndjson")
        let followed = try parse(["run", "--ndjson", "--json"])
        #expect(followed.value("ndjson") == "-")
        #expect(followed.flag("json"))
    }

    @Test func defaultsApplyWhenAbsent() throws {
        let command = try parse(["run"])
        #expect(command.value("limit") == "10")
        #expect(command.source(of: "limit") == .defaultValue)
        #expect(!command.isSpecified("limit"))
        #expect(command.value("token") == nil)
    }

    @Test func allowedValueAccepted() throws {
        #expect(try parse(["run", "--jitter", "decorrelated"]).value("jitter") == "decorrelated")
    }

    @Test func exclusiveGroupMemberAloneIsFine() throws {
        let command = try parse(["run", "--in", "5m"])
        #expect(try command.duration("in") == .seconds(300))
        #expect(command.value("run-at") == nil)
    }

    @Test func groupConstraintsSatisfied() throws {
        #expect(try parse(["dead", "replay", "1", "2"]).positionals("ids") == ["1", "2"])
        #expect(try parse(["dead", "replay", "--all"]).flag("all"))
        #expect(try parse(["dead", "replay", "--reason", "x"]).value("reason") == "x")
        #expect(try parse(["dead", "replay", "7", "--reason", "x"]).positionals("ids") == ["7"])
    }

    @Test func versionAtRoot() throws {
        let result = try CommandLineParser.parse(["--version"], root: Fixtures.root)
        guard case .version(let text) = result else {
            Issue.record("expected version, got \(result)")
            return
        }
        #expect(text == "tool 1.2.3")
    }

    @Test func argumentsListActiveSpecsOnly() throws {
        let command = try parse(["dead", "list"])
        #expect(command.arguments.map(\.long) == ["database-url", "reason"])
    }
}
