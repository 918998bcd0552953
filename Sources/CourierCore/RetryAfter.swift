import Foundation

/// Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3). Pure: `now` is a parameter.
///
/// Accepted forms:
/// - delay-seconds: one or more digits (`120`); huge values saturate;
/// - HTTP-date in any of the three RFC 9110 §5.6.7 formats:
///   IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
///   RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` (two-digit years more than
///   50 years in the future are taken as the previous century), and
///   asctime `Sun Nov  6 08:49:37 1994`.
///
/// Surrounding whitespace is ignored, and day and month names are matched
/// case-insensitively. Signs, fractions, garbage and impossible dates give nil.
/// A date in the past gives `.zero`. The result is not capped: the retry
/// policy caps it.
public enum RetryAfter {
    /// The delay the value asks for, or nil if it cannot be read.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingWhitespace()
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0.decimalDigit != nil }) {
            var seconds: Int64 = 0
            for byte in text.utf8 {
                let (m, o1) = seconds.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                if o1 || o2 { return .seconds(Int64.max / 1_000_000_000) }
                seconds = a
            }
            return .seconds(seconds)
        }
        guard let date = parseHTTPDate(text, now: now) else { return nil }
        let delay = date.timeIntervalSince(now)
        guard delay > 0 else { return .zero }
        // HTTP-dates have whole seconds; `now` may not. Milliseconds are plenty.
        return .milliseconds(Int64(min(delay * 1000, 9e18).rounded()))
    }

    /// Parses an HTTP-date in any of the three formats; nil if malformed.
    public static func parseHTTPDate(_ text: String, now: Date) -> Date? {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        if fields.count == 6, fields[0].hasSuffix(","), shortDayNames.contains(fields[0].dropLast().asciiLowercased),
           fields[5] == "GMT", fields[1].utf8.count == 2, fields[3].utf8.count == 4,
           let day = Int(digits: fields[1]), let month = monthNumber(fields[2]), let year = Int(digits: fields[3]),
           let time = parseTime(fields[4]) {
            return makeDate(year: year, month: month, day: day, time: time)
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        if fields.count == 4, fields[0].hasSuffix(","), longDayNames.contains(fields[0].dropLast().asciiLowercased),
           fields[3] == "GMT" {
            let parts = fields[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0].utf8.count == 2, parts[2].utf8.count == 2,
                  let day = Int(digits: parts[0]), let month = monthNumber(parts[1]), let twoDigitYear = Int(digits: parts[2]),
                  let time = parseTime(fields[2])
            else { return nil }
            // RFC 9110: a date more than 50 years in the future is in the past century.
            let currentYear = civilYear(of: now)
            let candidate = (currentYear / 100) * 100 + twoDigitYear
            guard let date = makeDate(year: candidate, month: month, day: day, time: time) else { return nil }
            let fiftyYears: TimeInterval = 50 * 365.2425 * 86_400
            if date.timeIntervalSince(now) > fiftyYears {
                return makeDate(year: candidate - 100, month: month, day: day, time: time)
            }
            if date.timeIntervalSince(now) < fiftyYears - 100 * 365.2425 * 86_400 {
                return makeDate(year: candidate + 100, month: month, day: day, time: time)
            }
            return date
        }
        // asctime: Sun Nov  6 08:49:37 1994 (the day may be padded with a space)
        if fields.count == 5, shortDayNames.contains(fields[0].asciiLowercased),
           let month = monthNumber(fields[1]), (1...2).contains(fields[2].utf8.count), let day = Int(digits: fields[2]),
           let time = parseTime(fields[3]), fields[4].utf8.count == 4, let year = Int(digits: fields[4]) {
            return makeDate(year: year, month: month, day: day, time: time)
        }
        return nil
    }

    private static let shortDayNames: Set<String> = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDayNames: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    private static let monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    private static func monthNumber(_ text: String) -> Int? {
        monthNames.firstIndex(of: text.asciiLowercased).map { $0 + 1 }
    }

    /// `HH:MM:SS` as seconds since midnight (a leap second 60 counts as 59).
    private static func parseTime(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, parts.allSatisfy({ $0.utf8.count == 2 }),
              let h = Int(digits: parts[0]), let m = Int(digits: parts[1]), let s = Int(digits: parts[2]),
              h < 24, m < 60, s <= 60
        else { return nil }
        return h * 3600 + m * 60 + min(s, 59)
    }

    private static func makeDate(year: Int, month: Int, day: Int, time: Int) -> Date? {
        guard year >= 1, day >= 1, day <= CivilDate.daysIn(month: month, year: year) else { return nil }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + time))
    }

    /// The UTC calendar year of `date`.
    static func civilYear(of date: Date) -> Int {
        let z = Int((date.timeIntervalSince1970 / 86_400).rounded(.down)) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let month = mp < 10 ? mp + 3 : mp - 9
        return yoe + era * 400 + (month <= 2 ? 1 : 0)
    }
}

extension Int {
    /// Parses ASCII decimal digits only (no sign, no spaces); nil otherwise.
    init?(digits text: String) {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0.decimalDigit != nil }) else { return nil }
        var value = 0
        for byte in text.utf8 { value = value * 10 + Int(byte - UInt8(ascii: "0")) }
        self = value
    }
}
