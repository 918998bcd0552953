import Foundation

/// The one timestamp grammar of Courier: `jobctl` flags, NDJSON lines and the Swift
/// API read points in time with it, by hand (a bulk load reads two per line, and
/// Foundation's ISO 8601 parser was a quarter of its client time).
///
/// Grammar (RFC 3339, strict):
/// - a date alone, `2030-01-01`, meaning midnight UTC;
/// - a date and time with a zone: `2030-01-01T10:00:00Z`,
///   `2030-01-01T10:00:00.123456+02:00`; `t`, `z` and a space in place of `T` are
///   accepted; 1 to 9 fraction digits (finer than a nanosecond is truncated).
///
/// Every field is range-checked and nothing is normalised: `2030-02-30`, `T25:00:00`,
/// minute or second 60 and offsets from ±24:00 are refused. Years are four digits,
/// so the range is ``range`` (0001-01-01 to 9999-12-31 23:59:59.999999999 UTC); a
/// time computed from a relative form (`now`, `+30m`, `-2h`) must fall within it too.
public enum Timestamp {
    /// The times Courier accepts and stores: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z.
    public static let range: ClosedRange<Date> =
        Date(timeIntervalSince1970: Double(CivilDate.daysSinceEpoch(year: 1, month: 1, day: 1)) * 86_400)
        ... Date(timeIntervalSince1970: Double(CivilDate.daysSinceEpoch(year: 10_000, month: 1, day: 1)) * 86_400 - 0.000_001)

    /// Why a text is not a timestamp.
    public enum Failure: Error, Sendable, Equatable {
        /// Not the grammar's shape.
        case malformed
        /// The shape is right but a field is out of its range (`2030-02-30`, `25:00`).
        case invalidField(String)
        /// The time is outside ``Timestamp/range``.
        case outOfRange

        /// The explanation for a person, quoting `text`.
        public func message(for text: String) -> String {
            switch self {
            case .malformed:
                return "must be an RFC 3339 time such as 2030-01-01T10:00:00Z or 2030-01-01T10:00:00.123+02:00, or a date such as 2030-01-01, got \(Quoting.quote(text))"
            case .invalidField(let detail):
                return "\(Quoting.quote(text)) is not a valid time: \(detail)"
            case .outOfRange:
                return "\(Quoting.quote(text)) is outside the supported range, 0001-01-01 to 9999-12-31"
            }
        }
    }

    /// Parses an absolute time; errors name `field`.
    public static func parse(_ text: String, field: String) throws(ValidationError) -> Date {
        switch read(text) {
        case .success(let date): return date
        case .failure(let failure): throw ValidationError(field: field, message: failure.message(for: text))
        }
    }

    /// Parses an absolute time, or a time relative to `now`: `now`, `+DURATION` or
    /// `-DURATION` (durations as ``DurationParser`` reads them). Errors name `field`.
    public static func parse(_ text: String, field: String, relativeTo now: Date) throws(ValidationError) -> Date {
        if text == "now" { return try checked(now, field: field, text: text) }
        if let sign = text.utf8.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            let offset = try DurationParser.parse(String(text.dropFirst()), field: field)
            let date = sign == UInt8(ascii: "+") ? now.adding(offset) : now.adding(.zero - offset)
            return try checked(date, field: field, text: text)
        }
        return try parse(text, field: field)
    }

    /// `date` if it lies within ``range``; otherwise an error naming `field`.
    public static func checked(_ date: Date, field: String, text: String? = nil) throws(ValidationError) -> Date {
        guard range.contains(date) else {
            throw ValidationError(field: field, message: Failure.outOfRange.message(for: text ?? format(date)))
        }
        return date
    }

    /// Reads an absolute time by the grammar above, without naming a field.
    public static func read(_ text: String) -> Result<Date, Failure> {
        var copy = text
        return copy.withUTF8 { read(bytes: $0) }
    }

    /// Reads an absolute time from UTF-8 bytes (the NDJSON reader's path: no copy).
    public static func read(bytes b: UnsafeBufferPointer<UInt8>) -> Result<Date, Failure> {
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for index in start..<(start + count) {
                guard let digit = b[index].decimalDigit else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        func isByte(_ index: Int, _ character: Unicode.Scalar) -> Bool {
            index < b.count && b[index] == UInt8(character.value)
        }
        guard let year = number(0, 4), isByte(4, "-"), let month = number(5, 2), isByte(7, "-"),
              let day = number(8, 2) else { return .failure(.malformed) }
        guard year >= 1 else { return .failure(.invalidField("year 0000 does not exist")) }
        guard (1...12).contains(month) else { return .failure(.invalidField("month \(month) is not 01 to 12")) }
        guard day >= 1, day <= CivilDate.daysIn(month: month, year: year) else {
            return .failure(.invalidField("day \(day) is not in \(year)-\(month < 10 ? "0" : "")\(month)"))
        }
        let days = Int64(CivilDate.daysSinceEpoch(year: year, month: month, day: day))
        if b.count == 10 { return .success(Date(timeIntervalSince1970: Double(days * 86_400))) }
        guard isByte(10, "T") || isByte(10, "t") || isByte(10, " "),
              let hour = number(11, 2), isByte(13, ":"), let minute = number(14, 2), isByte(16, ":"),
              let second = number(17, 2) else { return .failure(.malformed) }
        guard hour <= 23 else { return .failure(.invalidField("hour \(hour) is not 00 to 23")) }
        guard minute <= 59 else { return .failure(.invalidField("minute \(minute) is not 00 to 59")) }
        guard second <= 59 else { return .failure(.invalidField("second \(second) is not 00 to 59")) }
        var index = 19
        var nanos: Int64 = 0
        if isByte(index, ".") {
            index += 1
            var scale: Int64 = 100_000_000
            let start = index
            while index < b.count, let digit = b[index].decimalDigit {
                nanos += Int64(digit) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return .failure(.malformed) }
        }
        var offsetSeconds = 0
        if index == b.count - 1, isByte(index, "Z") || isByte(index, "z") {
            offsetSeconds = 0
        } else if index == b.count - 6, isByte(index, "+") || isByte(index, "-"), isByte(index + 3, ":"),
                  let hours = number(index + 1, 2), let minutes = number(index + 4, 2) {
            guard hours <= 23, minutes <= 59 else { return .failure(.invalidField("offset is not -23:59 to +23:59")) }
            offsetSeconds = (hours * 3600 + minutes * 60) * (isByte(index, "-") ? -1 : 1)
        } else {
            return .failure(.malformed)
        }
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second - offsetSeconds)
        let date = Date(timeIntervalSince1970: Double(seconds) + Double(nanos) / 1e9)
        // An offset can move 0001-01-01 or 9999-12-31 across the range's edge.
        return range.contains(date) ? .success(date) : .failure(.outOfRange)
    }

    /// `2026-11-29T20:00:00.123Z`: UTC, milliseconds (truncated), as `jobctl` prints times.
    /// ``parse(_:field:)`` reads it back.
    public static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite, abs(interval) < 1e14 else { return interval < 0 ? "-infinity" : "infinity" }
        let millis = Int64((interval * 1000).rounded(.down))
        var days = millis / 86_400_000
        var ofDay = millis % 86_400_000
        if ofDay < 0 { ofDay += 86_400_000; days -= 1 }
        let civil = CivilDate.civil(fromDaysSinceEpoch: Int(days))
        let (year, month, day) = (Int64(civil.year), Int64(civil.month), Int64(civil.day))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func append(_ value: Int64, width: Int) {
            var digits: [UInt8] = []
            var rest = value
            repeat { digits.append(UInt8(rest % 10) + UInt8(ascii: "0")); rest /= 10 } while rest > 0
            if digits.count < width { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
            bytes.append(contentsOf: digits.reversed())
        }
        if year < 0 { bytes.append(UInt8(ascii: "-")) }
        append(abs(year), width: 4); bytes.append(UInt8(ascii: "-"))
        append(month, width: 2); bytes.append(UInt8(ascii: "-"))
        append(day, width: 2); bytes.append(UInt8(ascii: "T"))
        append(ofDay / 3_600_000, width: 2); bytes.append(UInt8(ascii: ":"))
        append(ofDay / 60_000 % 60, width: 2); bytes.append(UInt8(ascii: ":"))
        append(ofDay / 1000 % 60, width: 2); bytes.append(UInt8(ascii: "."))
        append(ofDay % 1000, width: 3); bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
