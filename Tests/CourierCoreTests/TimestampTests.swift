import CourierCore
import Foundation
import Testing

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", 0.0),
        ("2024-05-01T12:00:00Z", 1_714_564_800),
        ("2024-05-01t12:00:00z", 1_714_564_800),
        ("2024-05-01 12:00:00Z", 1_714_564_800),
        ("2024-05-01T14:00:00+02:00", 1_714_564_800),
        ("2024-05-01T12:00:00-03:30", 1_714_577_400),
        ("2024-02-29", 1_709_164_800),
        ("2000-03-01", 951_868_800),
        ("1969-12-31T23:59:59Z", -1),
        ("2024-05-01T12:00:00.5Z", 1_714_564_800.5),
        ("2030-01-01", 1_893_456_000),
        ("2030-01-01T10:00:00.123456+02:00", 1_893_484_800.123456),
        ("0001-01-01T00:00:00Z", -62_135_596_800),
        ("9999-12-31T23:59:59Z", 253_402_300_799),
    ])
    func parses(_ text: String, _ seconds: Double) throws {
        let date = try Timestamp.parse(text, field: "run_at")
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001, "\(text)")
    }

    @Test func keepsMicroseconds() throws {
        let date = try Timestamp.parse("2030-01-01T10:00:00.123456+02:00", field: "x")
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        #expect(micros == 1_893_484_800_123_456)
    }

    @Test(arguments: [
        ("2023-02-29", "not a valid time"), ("2030-02-30", "not a valid time"), ("2024-04-31", "not a valid time"),
        ("2024-00-10", "not a valid time"), ("2024-13-01", "not a valid time"), ("0000-01-01", "not a valid time"),
        ("2030-01-01T25:00:00Z", "not a valid time"), ("2024-05-01T24:00:00Z", "not a valid time"),
        ("2024-05-01T12:60:00Z", "not a valid time"), ("2024-05-01T12:00:60Z", "not a valid time"),
        ("2024-05-01T12:00:00+24:00", "not a valid time"),
        ("2024-05-01T12:00:00.Z", "RFC 3339"), ("2024-05-01T12:00:00+0200", "RFC 3339"),
        ("2024-05-01T12:00Z", "RFC 3339"), ("2030-01-01T25:00", "RFC 3339"), ("", "RFC 3339"),
        ("24-05-01", "RFC 3339"), ("2024-05-01T12:00:00Z ", "RFC 3339"), ("2024-05-01T12:00:00", "RFC 3339"),
        ("2024-5-1", "RFC 3339"), ("2024-05-01junk", "RFC 3339"), ("infinity", "RFC 3339"), ("-infinity", "RFC 3339"),
        ("now", "RFC 3339"), ("0001-01-01T00:00:00+00:01", "outside the supported range"),
        ("9999-12-31T23:59:59-00:01", "outside the supported range"),
    ])
    func refusesWithoutNormalising(_ text: String, _ fragment: String) {
        #expect {
            try Timestamp.parse(text, field: "deadline")
        } throws: { error in
            guard let error = error as? ValidationError else { return false }
            return error.field == "deadline" && error.message.contains(fragment)
        }
    }

    @Test func relativeForms() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(try Timestamp.parse("now", field: "--at", relativeTo: now) == now)
        #expect(try Timestamp.parse("+1h30m", field: "--at", relativeTo: now) == now.addingTimeInterval(5400))
        #expect(try Timestamp.parse("-1.5s", field: "--at", relativeTo: now) == now.addingTimeInterval(-1.5))
        #expect(try Timestamp.parse("2030-01-01", field: "--at", relativeTo: now) == Date(timeIntervalSince1970: 1_893_456_000))
        // The longest duration from now lands within the range; nothing can reach infinity.
        let far = try Timestamp.parse("+106751d", field: "--at", relativeTo: now)
        #expect(Timestamp.range.contains(far))
        for bad in ["+99999999999h", "+5", "-2x", "2h", "+-1s"] {
            #expect(throws: ValidationError.self, "\(bad)") { try Timestamp.parse(bad, field: "--at", relativeTo: now) }
        }
        let tooEarly = #expect(throws: ValidationError.self) {
            try Timestamp.parse("-106751d", field: "--since", relativeTo: Date(timeIntervalSince1970: -60_000_000_000))
        }
        #expect(tooEarly?.message.contains("outside the supported range") == true)
        #expect(tooEarly?.field == "--since")
    }

    @Test func formatReadsBack() throws {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let millis = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &rng)
            let date = Date(timeIntervalSince1970: Double(millis) / 1000)
            let text = Timestamp.format(date)
            let back = try Timestamp.parse(text, field: "x")
            #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.0011, "\(text)")
        }
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_714_564_800.25)) == "2024-05-01T12:00:00.250Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test func civilDaysRoundTrip() {
        for days in stride(from: -800_000, through: 3_000_000, by: 997) {
            let (y, m, d) = CivilDate.civil(fromDaysSinceEpoch: days)
            #expect(CivilDate.daysSinceEpoch(year: y, month: m, day: d) == days)
        }
    }
}
