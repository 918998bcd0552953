import Foundation

/// Strict RFC 3339 timestamps, as the command line accepts them:
/// `2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.250+02:00`, or a date alone,
/// `2024-05-01`, meaning midnight UTC. A time needs a zone (`Z` or an offset).
public enum TimestampText {
    /// Parses `text`, or returns nil when it is not a valid timestamp.
    public static func parse(_ text: String) -> Date? {
        var reader = Reader(bytes: Array(text.utf8))
        guard let year = reader.number(digits: 4), reader.skip("-"),
              let month = reader.number(digits: 2), reader.skip("-"),
              let day = reader.number(digits: 2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else {
            return nil
        }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        if reader.atEnd {
            return Date(timeIntervalSince1970: Double(days) * 86_400)
        }
        guard reader.skip("T") || reader.skip("t") || reader.skip(" "),
              let hour = reader.number(digits: 2), reader.skip(":"),
              let minute = reader.number(digits: 2), reader.skip(":"),
              let second = reader.number(digits: 2),
              hour < 24, minute < 60, second < 60 else {
            return nil
        }
        var fraction = 0.0
        if reader.skip(".") {
            var scale = 0.1
            var count = 0
            while let digit = reader.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offset = 0
        if reader.skip("Z") || reader.skip("z") {
            offset = 0
        } else {
            let sign: Int
            if reader.skip("+") { sign = 1 } else if reader.skip("-") { sign = -1 } else { return nil }
            guard let offsetHours = reader.number(digits: 2), reader.skip(":"),
                  let offsetMinutes = reader.number(digits: 2), offsetHours < 24, offsetMinutes < 60 else {
                return nil
            }
            offset = sign * (offsetHours * 3_600 + offsetMinutes * 60)
        }
        guard reader.atEnd else { return nil }
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date.
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var atEnd: Bool { position == bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(character.value) else { return false }
            position += 1
            return true
        }

        mutating func digit() -> Int? {
            guard position < bytes.count, (48...57).contains(bytes[position]) else { return nil }
            position += 1
            return Int(bytes[position - 1] - 48)
        }

        mutating func number(digits: Int) -> Int? {
            var value = 0
            for _ in 0..<digits {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }
    }
}
