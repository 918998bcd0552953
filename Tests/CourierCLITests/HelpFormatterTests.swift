import Testing
@testable import CourierCLI

@Suite("Help derivation")
struct HelpFormatterTests {
    @Test func helpFlagAnywhereGivesTheSameText() throws {
        let viaCommand = try helpText(["help", "run"])
        #expect(try helpText(["run", "--help"]) == viaCommand)
        #expect(try helpText(["run", "-h"]) == viaCommand)
        #expect(try helpText(["--help", "run"]) == viaCommand)
        #expect(try helpText(["run", "--limit", "5", "--help"]) == viaCommand)
        #expect(try helpText(["run", "--bogus", "-h"]) == viaCommand)
        #expect(viaCommand == HelpFormatter.help(root: Fixtures.root, path: ["run"]))
    }

    @Test func helpSkipsOptionValuesThatLookLikeCommands() throws {
        let text = try helpText(["--database-url", "dead", "--help"])
        #expect(text == HelpFormatter.help(root: Fixtures.root, path: []))
        #expect(try helpText(["--database-url", "x", "dead", "--help"]) == HelpFormatter.help(root: Fixtures.root, path: ["dead"]))
    }

    @Test func helpAfterDoubleDashIsAWord() throws {
        let command = try parse(["cancel", "--", "--help"])
        #expect(command.positionals("ids") == ["--help"])
    }

    @Test func nestedHelp() throws {
        let text = try helpText(["help", "dead", "replay"])
        #expect(text == HelpFormatter.help(root: Fixtures.root, path: ["dead", "replay"]))
        #expect(try helpText(["dead", "help", "replay"]) == text)
        #expect(try helpText(["dead", "replay", "--help"]) == text)
        #expect(text.hasPrefix("Replay dead things.\n\nUsage: tool dead replay [ID... | --all] [--reason R]\n"))
    }

    @Test func bareRootShowsRootHelp() throws {
        #expect(try helpText([]) == HelpFormatter.help(root: Fixtures.root, path: []))
        #expect(try helpText(["help"]) == HelpFormatter.help(root: Fixtures.root, path: []))
    }

    @Test func unknownHelpPathIsNil() {
        #expect(HelpFormatter.help(root: Fixtures.root, path: ["nope"]) == nil)
    }

    @Test func rootHelpExactText() throws {
        let expected = """
            A tool for tests.

            Usage: tool [--database-url URL] COMMAND

            First paragraph of the discussion.

            Second paragraph.

            Commands:
              cancel             Cancel things.
              pair               Take a source and an optional target.
              dead list          List dead things.
              dead replay        Replay dead things.
              help [COMMAND...]  Show help for a command.

            Options:
              --database-url URL  Where the database is. (env: DB_URL)
              -h, --help          Show this help.
              --version           Show the version.

            Run 'tool COMMAND --help' for a command's options.
            """
        // `run` is listed too; check it separately to keep the literal short.
        let text = try helpText(["help"])
        #expect(text == expected.replacingOccurrences(
            of: "  cancel             Cancel things.",
            with: "  run                Run something.\n  cancel             Cancel things."))
    }

    @Test func leafHelpExactText() throws {
        let expected = """
            Take a source and an optional target.

            Usage: tool pair SRC [DST] --url URL

            Arguments:
              SRC                 Source.
              DST                 Target.

            Options:
              --url URL           A required URL.
              -h, --help          Show this help.

            Global options:
              --database-url URL  Where the database is. (env: DB_URL)
            """
        #expect(try helpText(["pair", "--help"]) == expected)
    }

    @Test func optionRowsShowDefaultsValuesEnvAndRepetition() throws {
        let text = try helpText(["run", "--help"])
        let flat = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("  -n, --limit N"))
        #expect(text.contains("How many. (default: 10)"))
        #expect(text.contains("-H, --header 'NAME: VALUE'"))
        #expect(text.contains("A header. (repeatable)"))
        #expect(flat.contains("Jitter mode. (values: full, equal, decorrelated, none; default: full)"))
        #expect(text.contains("A token. (env: TOOL_TOKEN)"))
        #expect(text.contains("--ndjson [FILE]"))
        #expect(text.contains("  -v, --verbose"))
    }

    @Test func usageShowsGroupsRepetitionAndOptionalValues() throws {
        let text = try helpText(["run", "--help"])
        let usage = text.components(separatedBy: "\n\n")[1]
        #expect(usage.hasPrefix("Usage: tool run [--limit N] [--header 'NAME: VALUE']... [--jitter MODE]\n"))
        #expect(usage.contains("[--run-at TIME | --in DURATION]"))
        #expect(usage.contains("[--ndjson [FILE]]"))
        #expect(usage.contains("[--left X | --right X]"))
        let continuation = String(repeating: " ", count: "Usage: tool run ".count)
        for line in usage.split(separator: "\n").dropFirst() {
            #expect(line.hasPrefix(continuation))
        }
    }

    @Test func requiredGroupUsesParentheses() {
        let spec = CommandSpec(
            name: "x", abstract: "X.",
            arguments: [
                .option("url", value: "URL", help: "U.", exclusiveGroup: "source"),
                .option("file", value: "FILE", help: "F.", exclusiveGroup: "source"),
                .positional("ids", value: "ID", help: "I.", repeatable: true),
            ],
            constraints: [.atLeastOne(of: ["url", "file"])])
        let text = HelpFormatter.help(for: spec, path: ["x"])
        #expect(text.contains("Usage: x (--url URL | --file FILE) ID...\n"))
        #expect(text.contains("  ID...        I."))
    }

    @Test func examplesAreVerbatimAndIndented() {
        let spec = CommandSpec(name: "x", abstract: "X.", examples: ["x --a \\\n    --b", "x"])
        let text = HelpFormatter.help(for: spec, path: ["x"])
        #expect(text.hasSuffix("Examples:\n  x --a \\\n      --b\n  x"))
    }

    @Test func preformattedDiscussionKeptAsWritten() {
        let spec = CommandSpec(name: "x", abstract: "X.", discussion: "Intro text.\n\n  keep   this\n  as is")
        let text = HelpFormatter.help(for: spec, path: ["x"])
        #expect(text.contains("Intro text.\n\n  keep   this\n  as is\n\nOptions:"))
    }

    @Test func longLeftCellMovesDescriptionBelow() {
        let spec = CommandSpec(name: "x", abstract: "X.", arguments: [
            .option("a-very-long-option-name", value: "DURATION", help: "Long one."),
            .flag("b", help: "Short one."),
        ])
        let text = HelpFormatter.help(for: spec, path: ["x"])
        let pad = String(repeating: " ", count: 2 + HelpFormatter.maxLeftColumn + 2)
        #expect(text.contains("  --a-very-long-option-name DURATION\n\(pad)Long one.\n"))
        #expect(text.contains("  --b" + String(repeating: " ", count: HelpFormatter.maxLeftColumn - 3 + 2) + "Short one."))
    }

    @Test func everyLineFitsAndHasNoTrailingSpace() {
        let words = Array(repeating: "wrap", count: 60).joined(separator: " ")
        let spec = CommandSpec(
            name: "x", abstract: words, discussion: words,
            arguments: (1...12).map { .option("option-\($0)", value: "VALUE", help: words, defaultValue: "d",
                                              environmentVariable: "X_OPTION_\($0)") })
        let text = HelpFormatter.help(for: spec, path: ["x"])
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            #expect(line.count <= HelpFormatter.width, "\(line)")
            #expect(!line.hasSuffix(" "), "\(line)")
        }
        #expect(!text.contains("\u{00A0}"))
    }

    @Test func helpIsDeterministic() {
        let first = HelpFormatter.help(root: Fixtures.root, path: ["run"])
        let second = HelpFormatter.help(root: Fixtures.root, path: ["run"])
        #expect(first == second)
    }
}

@Suite("Text wrapping")
struct TextWrapperTests {
    @Test func greedyWrapping() {
        #expect(TextWrapper.wrap("aaa bbb ccc ddd", width: 7) == ["aaa bbb", "ccc ddd"])
        #expect(TextWrapper.wrap("aaa bbb ccc", width: 8) == ["aaa bbb", "ccc"])
        #expect(TextWrapper.wrap("  spaced \n  out  ", width: 80) == ["spaced out"])
        #expect(TextWrapper.wrap("", width: 10).isEmpty)
    }

    @Test func longWordStaysWhole() {
        #expect(TextWrapper.wrap("a abcdefghijkl b", width: 5) == ["a", "abcdefghijkl", "b"])
    }

    @Test func noBreakSpaceHoldsWordsTogether() {
        let text = "xxxx env:\(TextWrapper.noBreakSpace)NAME"
        #expect(TextWrapper.wrap(text, width: 10) == ["xxxx", "env: NAME"])
    }

    @Test func paragraphs() {
        #expect(TextWrapper.paragraphs("one two\nthree\n\nfour", width: 80) == ["one two three", "", "four"])
        #expect(TextWrapper.paragraphs("x\n\n  a  b\n  c", width: 80) == ["x", "", "  a  b", "  c"])
    }
}

@Suite("Suggestions")
struct SuggestionsTests {
    @Test func editDistance() {
        #expect(Suggestions.editDistance("", "abc") == 3)
        #expect(Suggestions.editDistance("abc", "abc") == 0)
        #expect(Suggestions.editDistance("kitten", "sitting") == 3)
        #expect(Suggestions.editDistance("limt", "limit") == 1)
        #expect(Suggestions.editDistance("replya", "replay") == 2)
    }

    @Test func picksClosestWithinThreshold() {
        #expect(Suggestions.best(for: "limt", among: ["limit", "json"]) == "limit")
        #expect(Suggestions.best(for: "JSON", among: ["limit", "json"]) == "json")
        #expect(Suggestions.best(for: "xyzxyzxyz", among: ["limit", "json"]) == nil)
        #expect(Suggestions.best(for: "", among: ["limit"]) == nil)
    }

    @Test func uniquePrefixSuggested() {
        #expect(Suggestions.best(for: "breaker-cool", among: ["breaker-cooldown", "breaker-window"]) == "breaker-cooldown")
        #expect(Suggestions.best(for: "b", among: ["breaker-cooldown", "breaker-window"]) == nil)
    }
}
