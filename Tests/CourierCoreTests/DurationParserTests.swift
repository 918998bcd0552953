import CourierCore
import Testing

@Suite struct DurationParserTests {
    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)),
        ("30s", .seconds(30)),
        ("5m", .seconds(300)),
        ("2h", .seconds(7200)),
        ("1d", .seconds(86_400)),
        ("1h30m", .seconds(5400)),
        ("1.5s", .milliseconds(1500)),
        ("0.5m", .seconds(30)),
        ("1m30s250ms", .milliseconds(90_250)),
        ("0s", .zero),
        ("  45s\n", .seconds(45)),
        ("10us", .microseconds(10)),
        ("7ns", .nanoseconds(7)),
        ("1.0000000001s", .seconds(1)),  // finer than 1 ns is truncated
        (".5s", .milliseconds(500)),
        ("0", .zero),  // zero needs no unit
        ("7d", .seconds(604_800)),
        ("1d2h3m4s5ms", .milliseconds(93_784_005)),
        ("1h30m0.5s", .milliseconds(5_400_500)),
        ("106751d23h47m16.854775807s", .nanoseconds(Int64.max)),
    ])
    func parsesValidDurations(text: String, expected: Duration) throws {
        #expect(try DurationParser.parse(text, field: "--lease") == expected)
    }

    @Test(arguments: [
        ("", "empty"),
        ("   ", "empty"),
        ("-5s", "negative"),
        ("5", "missing a unit"),
        ("5x", "unknown unit"),
        ("5 s", "unexpected character"),
        ("5sec", "unknown unit"),
        ("s", "number followed by a unit"),
        ("1.s", "without digits"),
        ("+5s", "number followed by a unit"),
        ("99999999999999999999s", "too large"),
        ("300y", "unknown unit"),
        ("106752d", "too large"),
        ("106751d24h", "too large"),
        ("106751d106751d", "largest first, each once"),
        ("30m1h", "largest first, each once"),
        ("1h1h", "largest first, each once"),
        ("5M", "unknown unit"),
        ("00", "missing a unit"),
        ("0.0", "missing a unit"),
        ("ms5", "number followed by a unit"),
    ])
    func rejectsBadDurationsNamingTheField(text: String, fragment: String) {
        #expect {
            try DurationParser.parse(text, field: "--shutdown-grace")
        } throws: { error in
            guard let error = error as? ValidationError else { return false }
            return error.field == "--shutdown-grace"
                && error.message.contains(fragment)
                && error.description.hasPrefix("--shutdown-grace: ")
        }
    }

    @Test func parsePositiveRejectsZero() throws {
        #expect(throws: ValidationError(field: "timeout", message: "duration must be greater than zero")) {
            try DurationParser.parsePositive("0ms", field: "timeout")
        }
        #expect(try DurationParser.parsePositive("1ms", field: "timeout") == .milliseconds(1))
    }

    @Test(arguments: [
        (Duration.zero, "0s"),
        (.milliseconds(250), "250ms"),
        (.milliseconds(1500), "1.5s"),
        (.seconds(120), "2m"),
        (.seconds(90), "1m30s"),
        (.seconds(5400), "1h30m"),
        (.seconds(129_600), "1d12h"),
        (.microseconds(500), "500us"),
        (.microseconds(1500), "1.5ms"),
        (.nanoseconds(12), "12ns"),
        (.milliseconds(60_500), "1m500ms"),
        (.milliseconds(-250), "-250ms"),
    ])
    func formats(duration: Duration, expected: String) {
        #expect(DurationParser.format(duration) == expected)
        #expect(duration.formatted == expected)
    }

    @Test func formatRoundTripsThroughParse() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let nanos = Int64.random(in: 0...(10 * 86_400 * 1_000_000_000), using: &rng)
            let value = Duration.nanoseconds(nanos)
            #expect(try DurationParser.parse(DurationParser.format(value), field: "x") == value)
        }
    }

    @Test func helpers() {
        let d = Duration.milliseconds(1500)
        #expect(d.milliseconds == 1500)
        #expect(d.millisecondsDouble == 1500)
        #expect(Duration.microseconds(2500).milliseconds == 2)
        #expect(Duration.microseconds(2500).millisecondsDouble == 2.5)
        #expect(d.timeInterval == 1.5)
        #expect(Duration(timeInterval: 0.25) == .milliseconds(250))
        #expect(Duration(timeInterval: .nan) == .zero)
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
    }
}
