import Foundation
import Testing
@testable import CourierCLI

@Suite("Typed value getters")
struct ValueGetterTests {
    @Test func intParsesAndChecksRange() throws {
        #expect(try parse(["run", "--limit", "5"]).int("limit", range: 1...Int.max) == 5)
        #expect(try parse(["run"]).int("limit") == 10)
        #expect(try parse(["run"]).int("token") == nil)
        let bad = try parse(["run", "--limit", "abc"])
        let error = try #require(throws: UsageError.self) { try bad.int("limit", range: 1...Int.max) }
        #expect(error.description == "error: --limit: expected a positive integer, got 'abc'")
        #expect(error.exitCode == 2)
        #expect(error.code == .invalidValue)
    }

    @Test(arguments: [
        (1...Int.max, "-1000", "a positive integer"),
        (0...Int.max, "-1000", "a non-negative integer"),
        (5...Int.max, "-1000", "an integer of at least 5"),
        (Int.min...9, "1000", "an integer of at most 9"),
        (1...100, "1000", "an integer from 1 to 100"),
    ])
    func rangeDescriptions(_ range: ClosedRange<Int>, _ text: String, _ expected: String) throws {
        let command = try parse(["run", "--limit", text])
        let error = try #require(throws: UsageError.self) { try command.int("limit", range: range) }
        #expect(error.message == "expected \(expected), got '\(text)'")
    }

    @Test func intRejectsOutOfRangeAndJunk() throws {
        for text in ["0", "1.5", " 5", "5x", "", "99999999999999999999"] {
            let command = try parse(["run", "--limit=\(text)"])
            #expect(throws: UsageError.self, "\(text)") { try command.int("limit", range: 1...Int.max) }
        }
    }

    @Test func intsOfRepeatedValues() throws {
        let command = try parse(["cancel", "1", "22", "x"])
        let error = try #require(throws: UsageError.self) { try command.ints("ids") }
        #expect(error.description == "error: ID: expected an integer, got 'x'")
        #expect(try parse(["cancel", "4", "5"]).ints("ids") == [4, 5])
    }

    @Test func doubleGetter() throws {
        #expect(try parse(["run", "--ratio", "0.5"]).double("ratio", range: 0...1) == 0.5)
        let command = try parse(["run", "--ratio", "2"])
        let error = try #require(throws: UsageError.self) { try command.double("ratio", range: 0...1) }
        #expect(error.description == "error: --ratio: expected a number from 0 to 1, got '2'")
        let nan = try parse(["run", "--ratio", "nan"])
        #expect(throws: UsageError.self) { try nan.double("ratio") }
    }

    @Test func durationGetter() throws {
        #expect(try parse(["run"]).duration("lease") == .seconds(30))
        #expect(try parse(["run", "--lease", "1h30m"]).duration("lease") == .seconds(5400))
        let bad = try parse(["run", "--lease", "30"])
        let error = try #require(throws: UsageError.self) { try bad.duration("lease") }
        #expect(error.description == "error: --lease: expected a duration like 250ms, 30s, 5m, 2h or 1h30m, got '30'")
    }

    @Test func durationBounds() throws {
        let small = try parse(["run", "--lease", "0s"])
        let low = try #require(throws: UsageError.self) { try small.duration("lease", minimum: .milliseconds(1)) }
        #expect(low.message == "expected a duration of at least 1ms, got '0s'")
        let big = try parse(["run", "--lease", "2h"])
        let high = try #require(throws: UsageError.self) { try big.duration("lease", maximum: .seconds(3600)) }
        #expect(high.message == "expected a duration of at most 1h, got '2h'")
    }

    @Test func rateGetter() throws {
        let command = try parse(["run", "--rate", "20/s"])
        let rate = try #require(try command.rate("rate"))
        #expect(rate.perSecond == 20)
        let bad = try parse(["run", "--rate", "fast"])
        let error = try #require(throws: UsageError.self) { try bad.rate("rate") }
        #expect(error.description == "error: --rate: expected a positive rate like 20/s, 300/m or 1000/h, got 'fast'")
    }

    enum Jitter: String, CaseIterable { case full, equal, decorrelated, none }

    @Test func enumGetter() throws {
        #expect(try parse(["run"]).enumValue("jitter", as: Jitter.self) == .full)
        let command = try parse(["run", "--token", "equl"])
        let error = try #require(throws: UsageError.self) { try command.enumValue("token", as: Jitter.self) }
        #expect(error.description
            == "error: --token: expected one of full, equal, decorrelated, none, got 'equl'; did you mean equal?")
    }

    @Test func listGetter() throws {
        #expect(try parse(["run"]).list("queues") == ["default"])
        #expect(try parse(["run", "--queues", "a, b,c"]).list("queues") == ["a", "b", "c"])
        let command = try parse(["run", "--queues", "a,,b"])
        let error = try #require(throws: UsageError.self) { try command.list("queues") }
        #expect(error.description == "error: --queues: expected a comma-separated list without empty items, got 'a,,b'")
    }

    @Test func timestampGetter() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        func at(_ text: String) throws -> Date? { try parse(["run", "--at", text]).timestamp("at", now: now) }
        #expect(try at("now") == now)
        #expect(try at("-2h") == now.addingTimeInterval(-7200))
        #expect(try at("+30m") == now.addingTimeInterval(1800))
        #expect(try at("2024-05-01T12:00:00Z") == Date(timeIntervalSince1970: 1_714_564_800))
        #expect(try at("2024-05-01 12:00:00Z") == Date(timeIntervalSince1970: 1_714_564_800))
        #expect(try at("2024-05-01T14:00:00+02:00") == Date(timeIntervalSince1970: 1_714_564_800))
        #expect(try at("2024-05-01T12:00:00.250Z") == Date(timeIntervalSince1970: 1_714_564_800.25))
        #expect(try at("2024-05-01") == Date(timeIntervalSince1970: 1_714_521_600))
        #expect(try parse(["run"]).timestamp("at", now: now) == nil)
        for bad in ["yesterday", "2h", "2024-13-01", "2024-05-01T12:00:00", "-2x", "2024-05-01T12:00:00Zjunk",
                    "2024-05-01junk", "2024-5-1"] {
            let error = try #require(throws: UsageError.self, "\(bad)") { try at(bad) }
            #expect(error.field == "--at")
        }
    }
}

@Suite("Rates")
struct RateTests {
    @Test func parsesRates() throws {
        #expect(try #require(Rate.parse("20")).perSecond == 20)
        #expect(try #require(Rate.parse("20/s")).perSecond == 20)
        #expect(try #require(Rate.parse("300/m")).perSecond == 5)
        #expect(try #require(Rate.parse("300/min")).perSecond == 5)
        #expect(try #require(Rate.parse("3600/h")).perSecond == 1)
        #expect(try #require(Rate.parse("5/10s")).perSecond == 0.5)
        #expect(try #require(Rate.parse("0.5/s")).perSecond == 0.5)
        #expect(Rate.parse("20/s")?.description == "20/s")
        #expect(Rate.parse("300/min")?.description == "300/m")
        #expect(Rate.parse("5/10s")?.description == "5/10s")
    }

    @Test(arguments: ["", "0", "-1/s", "x/s", "20/", "20/x", "20/0s", "inf", "nan/s", "20/s/s"])
    func rejectsInvalidRates(_ text: String) {
        #expect(Rate.parse(text) == nil)
    }
}
