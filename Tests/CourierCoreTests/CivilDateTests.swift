import CourierCore
import Foundation
import Testing

@Suite struct CivilDateTests {
    @Test(arguments: [
        (1970, 1, 1, 0), (1969, 12, 31, -1), (2000, 2, 29, 11_016), (2000, 3, 1, 11_017),
        (2026, 11, 29, 20_786), (1600, 1, 1, -135_140), (2400, 12, 31, 157_419),
    ])
    func daysSinceEpochMatchesFoundation(year: Int, month: Int, day: Int, days: Int) throws {
        #expect(CivilDate.daysSinceEpoch(year: year, month: month, day: day) == days)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let date = try #require(calendar.date(from: DateComponents(year: year, month: month, day: day)))
        #expect(Int((date.timeIntervalSince1970 / 86_400).rounded()) == days)
    }

    @Test func monthLengthsFollowTheLeapYearRule() {
        #expect(CivilDate.daysIn(month: 2, year: 2024) == 29)
        #expect(CivilDate.daysIn(month: 2, year: 1900) == 28)
        #expect(CivilDate.daysIn(month: 2, year: 2000) == 29)
        #expect((1...12).map { CivilDate.daysIn(month: $0, year: 2026) } == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    }
}
