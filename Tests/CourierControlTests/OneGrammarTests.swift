import CourierCLI
import CourierControl
import CourierCore
import CourierStore
import Foundation
import Testing

/// One grammar for durations and one for times, at every door: jobctl flags, NDJSON
/// lines and the Swift API answer the same texts alike, and refuse the same texts.
@Suite("One grammar at every door")
struct OneGrammarTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func enqueueCommand(_ flags: [String]) throws -> ParsedCommand {
        let result = try CommandLineParser.parse(["enqueue", "--url", "http://example.com/"] + flags,
                                                 root: JobctlCommands.root, environment: [:])
        guard case .run(let command) = result else { throw UsageError(code: .invalidValue, field: "test", message: "\(result)", commandPath: []) }
        return command
    }

    func ndjson(_ key: String, _ text: String) throws(ValidationError) -> Date? {
        let request = try EnqueueRequest(jsonLine: #"{"url": "http://example.com/", "\#(key)": "\#(text)"}"#)
        return key == "run_at" ? request.runAt : request.deadline
    }

    @Test(arguments: ["2030-01-01", "2030-01-01T10:00:00.123456+02:00", "2030-01-01T10:00:00Z", "2030-01-01 10:00:00.5-01:30"])
    func aTimeReadsTheSameEverywhere(_ text: String) throws {
        let swift = try Timestamp.parse(text, field: "run_at")
        #expect(try ndjson("run_at", text) == swift)
        #expect(try ndjson("deadline", text) == swift)
        #expect(try enqueueCommand(["--run-at", text]).timestamp("run-at", now: Self.now) == swift)
        #expect(try enqueueCommand(["--deadline", text]).timestamp("deadline", now: Self.now) == swift)
    }

    @Test(arguments: [("1h30m", Duration.seconds(5400)), ("1.5s", .milliseconds(1500)), ("250ms", .milliseconds(250)),
                      ("7d", .seconds(604_800)), ("0", .zero)])
    func aDurationReadsTheSameEverywhere(_ text: String, _ expected: Duration) throws {
        #expect(try DurationParser.parse(text, field: "x") == expected)
        #expect(try enqueueCommand(["--in", text]).duration("in") == expected)
        #expect(try enqueueCommand(["--in", text]).dateAfter("in", now: Self.now) == Self.now.adding(expected))
        #expect(try enqueueCommand(["--run-at", "+" + text]).timestamp("run-at", now: Self.now) == Self.now.adding(expected))
    }

    @Test(arguments: ["2030-02-30", "2030-01-01T25:00:00Z", "2030-01-01T10:00", "2030-01-01T10:00:00", "infinity", "10000-01-01"])
    func aBadTimeIsRefusedEverywhereNamingTheField(_ text: String) throws {
        #expect(throws: ValidationError.self) { try Timestamp.parse(text, field: "run_at") }
        let line = #expect(throws: ValidationError.self) { try ndjson("run_at", text) }
        #expect(line?.field == "run_at")
        let flag = #expect(throws: UsageError.self) { try enqueueCommand(["--run-at", text]).timestamp("run-at", now: Self.now) }
        #expect(flag?.field == "--run-at")
    }

    @Test func theSwiftAPIRefusesTimesOutsideTheRange() {
        var request = EnqueueRequest(url: "http://example.com/")
        let year33658 = Date(timeIntervalSince1970: 1e12)
        request.runAt = year33658
        #expect(throws: ValidationError(field: "run_at", message: Timestamp.Failure.outOfRange.message(for: Timestamp.format(year33658)))) {
            try request.validate()
        }
        request.runAt = nil
        request.deadline = Date(timeIntervalSince1970: .infinity)
        let error = #expect(throws: ValidationError.self) { try request.validate() }
        #expect(error?.field == "deadline")
    }

    /// Issue 18: `--in 99999999999h` stored `infinity`. It is refused, naming the flag,
    /// and nothing reaches the database.
    @Test func anEnormousDurationIsRefusedAndStoresNothing() throws {
        try ControlFixture.with { fixture throws in
            for flags in [["--in", "99999999999h"], ["--within", "99999999999h"], ["--run-at", "+99999999999h"],
                          ["--run-at", "2030-02-30"], ["--deadline", "2030-01-01T25:00:00Z"]] {
                let result = fixture.run(["enqueue", "--url", "http://example.com/"] + flags)
                #expect(result.status == 2, "\(flags): \(result)")
                #expect(result.err.contains(flags[0]), "\(flags): \(result.err)")
            }
            let line = #"{"url": "http://example.com/", "run_at": "2030-02-30T00:00:00Z"}"#
            let file = try TemporaryFile(line + "\n", suffix: ".ndjson")
            let bulk = fixture.run(["enqueue", "--ndjson", file.path])
            #expect(bulk.status == 2, "\(bulk)")
            #expect(bulk.err.contains("run_at"), "\(bulk.err)")
            #expect(try fixture.jobCount == 0)
        }
    }
}
