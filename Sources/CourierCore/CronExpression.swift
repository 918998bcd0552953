/// A classic five-field cron expression: `minute hour day-of-month month day-of-week`.
///
/// Grammar (one place; everything else asks this type):
/// - Fields are separated by spaces or tabs. Each field is a comma-separated list of
///   items; an item is `*`, a value `N`, a range `N-M`, optionally followed by a step
///   `/S` (`*/15`, `0-30/10`); `N/S` means `N-max/S`.
/// - Ranges: minute 0-59, hour 0-23, day-of-month 1-31, month 1-12 or `JAN`-`DEC`,
///   day-of-week 0-7 or `SUN`-`SAT` (0 and 7 are both Sunday). Names are case-insensitive.
///   A range must not run backwards; a step must be at least 1.
/// - Macros: `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`), `@hourly`.
/// - Day-of-month and day-of-week: when both are restricted (neither starts with `*`),
///   a day matches if *either* matches (the classic Vixie cron OR rule); otherwise both
///   must match (so a `*` or `*/2` field restricts nothing beyond its own values).
///
/// Matching happens in local wall-clock time; ``next(after:in:)`` turns wall times into
/// instants with the time zone's rules (see there for daylight-saving transitions).
public struct CronExpression: Sendable, Equatable, CustomStringConvertible {
    /// The expression as written (trimmed).
    public let text: String
    let minutes: UInt64        // bit n: minute n
    let hours: UInt32          // bit n: hour n
    let daysOfMonth: UInt32    // bit n: day n (1...31)
    let months: UInt16         // bit n: month n (1...12)
    let daysOfWeek: UInt8      // bit n: weekday n (0 = Sunday ... 6)
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool

    /// The macros and the five fields they stand for.
    public static let macros: [(name: String, fields: String)] = [
        ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@hourly", "0 * * * *"),
    ]

    struct Field {
        let name: String
        let range: ClosedRange<Int>
        let names: [String]   // names[i] is value range.lowerBound + i
    }

    static let fields: [Field] = [
        Field(name: "minute", range: 0...59, names: []),
        Field(name: "hour", range: 0...23, names: []),
        Field(name: "day-of-month", range: 1...31, names: []),
        Field(name: "month", range: 1...12,
              names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]),
        Field(name: "day-of-week", range: 0...7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]),
    ]

    /// The longest expression accepted, in characters (the check on `courier.schedules.cron`
    /// says the same; `CronExpressionTests` holds them together).
    public static let maximumLength = 200

    /// Parses `text`; errors name `field` (the flag or column the text came from) and the cron field.
    public init(parsing text: String, field: String = "cron") throws(ValidationError) {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.unicodeScalars.count <= Self.maximumLength else {
            throw ValidationError(field: field, message: "at most \(Self.maximumLength) characters, got \(trimmed.unicodeScalars.count)")
        }
        var body = trimmed
        if trimmed.hasPrefix("@") {
            guard let macro = Self.macros.first(where: { $0.name == trimmed.lowercased() }) else {
                throw ValidationError(field: field, message: "unknown macro \(Quoting.quote(trimmed)); use one of \(Self.macros.map(\.name).joined(separator: ", "))")
            }
            body = macro.fields
        }
        let parts = body.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 5 else {
            throw ValidationError(field: field, message: "expected 5 fields (minute hour day-of-month month day-of-week), got \(parts.count)")
        }
        var sets: [UInt64] = []
        for (index, part) in parts.enumerated() {
            sets.append(try Self.parseField(part, Self.fields[index], flag: field))
        }
        self.text = trimmed
        minutes = sets[0]
        hours = UInt32(truncatingIfNeeded: sets[1])
        daysOfMonth = UInt32(truncatingIfNeeded: sets[2])
        months = UInt16(truncatingIfNeeded: sets[3])
        // 7 is Sunday too.
        daysOfWeek = UInt8(truncatingIfNeeded: (sets[4] & 0x7F) | (sets[4] >> 7 & 1))
        dayOfMonthRestricted = !parts[2].hasPrefix("*")
        dayOfWeekRestricted = !parts[4].hasPrefix("*")
        if !(dayOfMonthRestricted && dayOfWeekRestricted) {
            // Days of the month must exist in some chosen month (`0 0 30 2 *` never runs).
            let possible = (1...12).contains { month in
                months >> month & 1 == 1
                    && (daysOfMonth & Self.bits(1...CivilDate.daysIn(month: month, year: 2000))) != 0
            }
            guard possible else {
                throw ValidationError(field: field, message: "day-of-month field: \(Quoting.quote(parts[2])) never occurs in the months of \(Quoting.quote(parts[3]))")
            }
        }
    }

    public var description: String { text }

    private static func bits(_ range: ClosedRange<Int>) -> UInt32 {
        var value: UInt32 = 0
        for n in range { value |= 1 << UInt32(n) }
        return value
    }

    private static func parseField(_ text: String, _ spec: Field, flag: String) throws(ValidationError) -> UInt64 {
        func fail(_ message: String) -> ValidationError {
            ValidationError(field: flag, message: "\(spec.name) field: \(message)")
        }
        func value(_ token: Substring) throws(ValidationError) -> Int {
            if let number = Int(token), !token.hasPrefix("+"), !token.hasPrefix("-") {
                guard spec.range.contains(number) else {
                    throw fail("\(number) is out of range \(spec.range.lowerBound)-\(spec.range.upperBound)")
                }
                return number
            }
            if let index = spec.names.firstIndex(of: token.uppercased()), !token.isEmpty {
                return spec.range.lowerBound + index
            }
            if token.isEmpty { throw fail("a value is missing in \(Quoting.quote(text))") }
            let names = spec.names.isEmpty ? "" : " or a name such as \(spec.names[1])"
            throw fail("\(Quoting.quote(String(token))) is not a number from \(spec.range.lowerBound) to \(spec.range.upperBound)\(names)")
        }
        var set: UInt64 = 0
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !item.isEmpty else { throw fail("empty list item in \(Quoting.quote(text))") }
            let pieces = item.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            var step = 1
            if pieces.count == 2 {
                guard let number = Int(pieces[1]), !pieces[1].hasPrefix("+"), !pieces[1].hasPrefix("-") else {
                    throw fail("step \(Quoting.quote(String(pieces[1]))) is not a positive number")
                }
                guard number >= 1 else { throw fail("step must be at least 1, got \(number)") }
                step = number
            }
            let rangeText = pieces[0]
            var low: Int
            var high: Int
            if rangeText == "*" {
                low = spec.range.lowerBound
                high = spec.name == "day-of-week" ? 6 : spec.range.upperBound
            } else if let dash = rangeText.firstIndex(of: "-"), dash != rangeText.startIndex {
                low = try value(rangeText[..<dash])
                high = try value(rangeText[rangeText.index(after: dash)...])
                guard low <= high else { throw fail("range \(Quoting.quote(String(rangeText))) runs backwards") }
            } else {
                low = try value(rangeText)
                high = pieces.count == 2 ? spec.range.upperBound : low
            }
            var n = low
            while n <= high {
                set |= 1 << UInt64(n)
                n += step
            }
        }
        return set
    }

    // MARK: - Matching in wall-clock time

    /// Whether the hour field allows every hour.
    public var runsEveryHour: Bool { hours & 0xFF_FFFF == 0xFF_FFFF }

    /// Whether a wall-clock time of day matches the minute and hour fields.
    public func matchesTimeOfDay(hour: Int, minute: Int) -> Bool {
        hours >> hour & 1 == 1 && minutes >> minute & 1 == 1
    }

    /// Whether the calendar day matches the day-of-month, month and day-of-week fields.
    func matches(year: Int, month: Int, day: Int, weekday: Int) -> Bool {
        guard months >> month & 1 == 1 else { return false }
        let dom = daysOfMonth >> day & 1 == 1
        let dow = daysOfWeek >> weekday & 1 == 1
        return dayOfMonthRestricted && dayOfWeekRestricted ? (dom || dow) : (dom && dow)
    }

    /// The first matching wall-clock minute at or after `wall` (seconds since 1970 as if the
    /// wall clock were UTC, a multiple of 60), searching at most about 30 years ahead.
    func nextWallMinute(atOrAfter wall: Int64) -> Int64? {
        var days = Int(wall.floorDivided(by: 86_400))
        var minuteOfDay = Int((wall - Int64(days) * 86_400) / 60)
        let limit = days + 366 * 30
        while days <= limit {
            let (year, month, day) = CivilDate.civil(fromDaysSinceEpoch: days)
            if months >> month & 1 == 0 {
                // Jump to the first day of the next month.
                days = month == 12 ? CivilDate.daysSinceEpoch(year: year + 1, month: 1, day: 1)
                                   : CivilDate.daysSinceEpoch(year: year, month: month + 1, day: 1)
                minuteOfDay = 0
                continue
            }
            let weekday = ((days % 7) + 11) % 7   // 1970-01-01 was a Thursday (4)
            if matches(year: year, month: month, day: day, weekday: weekday), let minute = firstTime(atOrAfter: minuteOfDay) {
                return Int64(days) * 86_400 + Int64(minute) * 60
            }
            days += 1
            minuteOfDay = 0
        }
        return nil
    }

    /// The first matching minute of the day at or after `minuteOfDay`.
    private func firstTime(atOrAfter minuteOfDay: Int) -> Int? {
        var hour = minuteOfDay / 60
        var fromMinute = minuteOfDay % 60
        while hour < 24 {
            if hours >> hour & 1 == 1 {
                let candidates = minutes & (~UInt64(0) << UInt64(fromMinute))
                if candidates != 0 { return hour * 60 + candidates.trailingZeroBitCount }
            }
            hour += 1
            fromMinute = 0
        }
        return nil
    }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
