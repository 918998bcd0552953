import Foundation

/// Converts between `Date` and PostgreSQL's ISO timestamp text, without Foundation
/// formatters (pure arithmetic, proleptic Gregorian calendar, microsecond precision).
public enum PostgresTimestamp {
    private static let microsPerSecond: Int64 = 1_000_000
    private static let microsPerDay: Int64 = 86_400 * 1_000_000

    /// Formats `date` as `timestamptz` input in UTC, rounded to the microsecond:
    /// `2026-11-29 20:23:52.123456+00` (years before 1 get PostgreSQL's ` BC` suffix).
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        if seconds.isNaN || seconds >= 9.2e12 { return "infinity" }
        if seconds <= -9.2e12 { return "-infinity" }
        let micros = Int64((seconds * 1_000_000).rounded())
        let days = floorDivide(micros, microsPerDay)
        let timeOfDay = micros - days * microsPerDay
        let (year, month, day) = civil(fromDays: days)
        let hour = timeOfDay / (3600 * microsPerSecond)
        let minute = timeOfDay / (60 * microsPerSecond) % 60
        let second = timeOfDay / microsPerSecond % 60
        let fraction = timeOfDay % microsPerSecond
        let displayYear = year > 0 ? year : 1 - year
        // Written digit by digit: bulk enqueue formats two of these per row.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        func append(_ value: Int64, width: Int) {
            let digits = String(value).utf8
            if digits.count < width { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
            bytes.append(contentsOf: digits)
        }
        append(displayYear, width: 4); bytes.append(UInt8(ascii: "-"))
        append(month, width: 2); bytes.append(UInt8(ascii: "-"))
        append(day, width: 2); bytes.append(UInt8(ascii: " "))
        append(hour, width: 2); bytes.append(UInt8(ascii: ":"))
        append(minute, width: 2); bytes.append(UInt8(ascii: ":"))
        append(second, width: 2); bytes.append(UInt8(ascii: "."))
        append(fraction, width: 6)
        bytes.append(contentsOf: "+00".utf8)
        if year <= 0 { bytes.append(contentsOf: " BC".utf8) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses PostgreSQL's DateStyle ISO output of `timestamptz`, `timestamp` (read as UTC)
    /// and `date` (midnight UTC): `YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH[:MM[:SS]]][ BC]`,
    /// also with `T` as separator or `Z` as offset. `infinity`/`-infinity` map to
    /// `Date.distantFuture`/`Date.distantPast`.
    public static func parse(_ text: String) throws -> Date {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var scanner = Scanner(Array(text.utf8))
        guard var year = scanner.number(minDigits: 4, maxDigits: 9),
              scanner.skip("-"), let month = scanner.number(minDigits: 2, maxDigits: 2),
              scanner.skip("-"), let day = scanner.number(minDigits: 2, maxDigits: 2),
              (1...12).contains(month), (1...31).contains(day)
        else { throw invalid("bad date") }
        var micros: Int64 = 0
        if scanner.skip(" ") || scanner.skip("T") {
            guard let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
                  let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
                  let second = scanner.number(minDigits: 2, maxDigits: 2),
                  hour <= 24, minute < 60, second <= 60
            else { throw invalid("bad time") }
            micros = (hour * 3600 + minute * 60 + second) * microsPerSecond
            if scanner.skip(".") {
                var scale: Int64 = 100_000
                var digits = 0
                var roundUp = false
                while let digit = scanner.digit() {
                    if digits < 6 {
                        micros += digit * scale
                        scale /= 10
                    } else if digits == 6 {
                        roundUp = digit >= 5
                    }
                    digits += 1
                }
                guard digits > 0 else { throw invalid("bad fraction") }
                if roundUp { micros += 1 }
            }
            var offsetSign: Int64 = 0
            if scanner.skip("+") { offsetSign = 1 } else if scanner.skip("-") { offsetSign = -1 } else if scanner.skip("Z") { offsetSign = 0 }
            if offsetSign != 0 {
                guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else { throw invalid("bad offset") }
                var offsetSeconds = hours * 3600
                if scanner.skip(":") {
                    guard let minutes = scanner.number(minDigits: 2, maxDigits: 2) else { throw invalid("bad offset") }
                    offsetSeconds += minutes * 60
                    if scanner.skip(":") {
                        guard let seconds = scanner.number(minDigits: 2, maxDigits: 2) else { throw invalid("bad offset") }
                        offsetSeconds += seconds
                    }
                }
                micros -= offsetSign * offsetSeconds * microsPerSecond
            }
        }
        if scanner.skip(" BC") { year = 1 - year }
        guard scanner.atEnd else { throw invalid("trailing characters") }
        let total = days(fromCivil: year, month, day) * microsPerDay + micros
        return Date(timeIntervalSince1970: Double(total) / 1_000_000)
    }

    // MARK: - Calendar arithmetic (days since 1970-01-01, proleptic Gregorian)

    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func invalid(_ reason: String) -> PostgresError {
        PostgresError.decoding(Date.self, reason)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            let matches = literal.withUTF8Buffer { buffer in
                buffer.indices.allSatisfy { bytes[index + $0] == buffer[$0] }
            }
            if matches { index += count }
            return matches
        }

        mutating func digit() -> Int64? {
            guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else { return nil }
            defer { index += 1 }
            return Int64(bytes[index] - UInt8(ascii: "0"))
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            let start = index
            var value: Int64 = 0
            while index - start < maxDigits, let digit = digit() { value = value * 10 + digit }
            return index - start >= minDigits ? value : nil
        }
    }
}
