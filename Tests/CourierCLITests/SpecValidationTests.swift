import Testing
@testable import CourierCLI

@Suite("Declaration checks")
struct SpecValidationTests {
    @Test func fixtureIsSound() {
        #expect(Fixtures.root.validationProblems() == [])
    }

    @Test func catchesMistakes() {
        let broken = CommandSpec(
            name: "x", abstract: "",
            arguments: [
                .option("dup", value: "V", help: "A."),
                .flag("dup", help: "B."),
                .flag("help", short: "h", help: "Reserved."),
                .option("mode", value: "M", help: "M.", defaultValue: "c", allowedValues: ["a", "b"]),
                .flag("lonely", help: "L.", exclusiveGroup: "solo"),
                .positional("rest", value: "REST", help: "R.", repeatable: true),
                .positional("last", value: "LAST", help: "L."),
            ],
            subcommands: [CommandSpec(name: "help", abstract: "H.")],
            constraints: [.atLeastOne(of: ["ghost"])])
        let problems = broken.validationProblems()
        let expectedFragments = [
            "empty abstract", "'dup' declared twice", "'help' and '-h' are reserved",
            "default 'c' is not an allowed value", "exclusive group 'solo' has only one member",
            "repeatable positional argument must come last", "undeclared argument 'ghost'",
            "subcommand 'help' is duplicated or reserved", "may only declare global arguments",
        ]
        for fragment in expectedFragments {
            #expect(problems.contains { $0.contains(fragment) }, "missing: \(fragment)")
        }
    }

    @Test func requiredAfterOptionalPositional() {
        let spec = CommandSpec(name: "x", abstract: "X.", arguments: [
            .positional("a", value: "A", help: "A.", required: false),
            .positional("b", value: "B", help: "B."),
        ])
        #expect(spec.validationProblems() == ["x B: a required positional argument cannot follow an optional one"])
    }

    @Test func globalShadowedBySubcommand() {
        let spec = CommandSpec(
            name: "x", abstract: "X.",
            arguments: [.flag("json", help: "J.", isGlobal: true)],
            subcommands: [CommandSpec(name: "y", abstract: "Y.", arguments: [.flag("json", help: "J.")])])
        #expect(spec.validationProblems() == ["x y: 'json' declared twice"])
    }

    @Test func pathsEnumeration() {
        #expect(Fixtures.root.allPaths() == [[], ["run"], ["cancel"], ["pair"], ["dead"], ["dead", "list"], ["dead", "replay"]])
        #expect(Fixtures.root.leafPaths() == [["run"], ["cancel"], ["pair"], ["dead", "list"], ["dead", "replay"]])
        #expect(Fixtures.root.chain(for: ["dead", "replay"])?.map(\.name) == ["tool", "dead", "replay"])
        #expect(Fixtures.root.chain(for: ["dead", "nope"]) == nil)
    }
}
