import CourierCore
import Foundation
import Testing

@Suite struct RetryAfterTests {
    /// Tue, 14 Nov 2023 22:13:20 GMT
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(arguments: [
        ("0", Duration.zero),
        ("2", .seconds(2)),
        ("120", .seconds(120)),
        ("  30\t", .seconds(30)),
        ("007", .seconds(7)),
        ("Tue, 14 Nov 2023 22:14:20 GMT", .seconds(60)),       // IMF-fixdate
        ("tue, 14 nov 2023 22:14:20 GMT", .seconds(60)),       // lenient case of names
        ("Tuesday, 14-Nov-23 22:15:20 GMT", .seconds(120)),    // RFC 850
        ("Tue Nov 14 22:16:20 2023", .seconds(180)),           // asctime
        ("Sun Nov  6 08:49:37 1994", .zero),                   // asctime, padded day, past
        ("Sun, 06 Nov 1994 08:49:37 GMT", .zero),              // past date
        ("Sunday, 06-Nov-94 08:49:37 GMT", .zero),             // RFC 850 two-digit year in the past century
        ("Tue, 14 Nov 2023 22:13:20 GMT", .zero),              // exactly now
        ("Thu, 29 Feb 2024 00:00:00 GMT", .seconds(9_164_800)),// leap day
        (" Wed, 15 Nov 2023 00:13:20 GMT ", .seconds(7200)),
    ])
    func parses(value: String, expected: Duration) {
        #expect(RetryAfter.parse(value, now: now) == expected)
    }

    @Test(arguments: [
        "", "   ", "-5", "+5", "1.5", "5s", "soon", "0x10",
        "Tue, 14 Nov 2023 22:14:20 UTC",     // zone must be GMT
        "Tue, 14 Nov 2023 25:00:00 GMT",     // hour out of range
        "Tue, 31 Nov 2023 10:00:00 GMT",     // no 31 November
        "Thu, 29 Feb 2023 00:00:00 GMT",     // not a leap year
        "Tue, 14 Foo 2023 22:14:20 GMT",
        "Xyz, 14 Nov 2023 22:14:20 GMT",
        "Tue, 4 Nov 2023 22:14:20 GMT",      // IMF-fixdate needs two-digit day
        "Tue 14 Nov 2023 22:14:20 GMT",
        "Tuesday, 14-Nov-2023 22:15:20 GMT",
        "Tue Nov 14 22:16 2023",
        "1 2",
    ])
    func rejectsGarbage(value: String) {
        #expect(RetryAfter.parse(value, now: now) == nil)
    }

    @Test func hugeDelaySaturatesInsteadOfFailing() throws {
        let value = try #require(RetryAfter.parse("99999999999999999999999", now: now))
        #expect(value > .seconds(1_000_000_000))
    }

    @Test func rfc850YearsMoreThanFiftyYearsAheadAreThePast() throws {
        // Now is 2023-11-14. 2074-01-01 is more than 50 years ahead, so "74" is 1974;
        // 2073-01-01 is 49 years ahead, so "73" stays 2073; "99" is 1999.
        let past = try #require(RetryAfter.parseHTTPDate("Tuesday, 01-Jan-74 00:00:00 GMT", now: now))
        #expect(past == Date(timeIntervalSince1970: 126_230_400))
        let future = try #require(RetryAfter.parseHTTPDate("Sunday, 01-Jan-73 00:00:00 GMT", now: now))
        #expect(future == Date(timeIntervalSince1970: 3_250_454_400))
        let ninetyNine = try #require(RetryAfter.parseHTTPDate("Friday, 31-Dec-99 23:59:59 GMT", now: now))
        #expect(ninetyNine == Date(timeIntervalSince1970: 946_684_799))
        // Near the turn of a century, "01" read in 2095 is 2101, not 2001.
        let late = Date(timeIntervalSince1970: 3_944_678_400)  // 2095-01-01
        let wrapped = try #require(RetryAfter.parseHTTPDate("Saturday, 01-Jan-01 00:00:00 GMT", now: late))
        #expect(wrapped == Date(timeIntervalSince1970: 4_133_980_800))  // 2101-01-01
    }

    @Test func futureDateHasMillisecondPrecision() {
        let almost = now.addingTimeInterval(0.4)
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:13:21 GMT", now: almost) == .milliseconds(600))
        #expect(RetryAfter.parse("Tue, 14 Nov 2023 22:13:20 GMT", now: almost) == .zero)
    }
}
