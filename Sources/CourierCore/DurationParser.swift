/// Parses and formats the durations users write: `250ms`, `30s`, `5m`, `2h`,
/// `1d`, combinations such as `1h30m`, and decimals such as `1.5s`.
///
/// Grammar: one or more `<number><unit>` groups with no spaces between them
/// (surrounding whitespace is ignored). `<number>` is digits with an optional
/// `.fraction`; `<unit>` is one of `ns`, `us`, `ms`, `s`, `m`, `h`, `d`
/// (`d` is 24 hours). Signs, bare numbers, unknown units and totals above
/// ``maximumNanoseconds`` are rejected with an error naming the field.
/// Precision is one nanosecond; finer fractions are truncated.
public enum DurationParser {
    /// The largest total accepted, in nanoseconds (about 292 years: `Int64.max`).
    public static let maximumNanoseconds: Int64 = .max

    private static let units: [(name: String, nanoseconds: Int64)] = [
        ("ns", 1),
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
    ]

    /// Parses `text`; errors name `field`.
    public static func parse(_ text: String, field: String) throws(ValidationError) -> Duration {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty else {
            throw ValidationError(field: field, message: "empty duration; write e.g. 250ms, 30s, 5m, 2h, 1h30m")
        }
        let bytes = Array(trimmed.utf8)
        if bytes[0] == UInt8(ascii: "-") {
            throw ValidationError(field: field, message: "duration \(Quoting.quote(text)) must not be negative")
        }
        var index = 0
        var total: Int64 = 0
        let overflow = ValidationError(field: field, message: "duration \(Quoting.quote(text)) is too large")
        while index < bytes.count {
            // Number: digits, optional fraction.
            var whole: Int64 = 0
            var wholeOverflow = false
            var sawDigit = false
            while index < bytes.count, let digit = bytes[index].decimalDigit {
                sawDigit = true
                let (m, o1) = whole.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(digit))
                if o1 || o2 { wholeOverflow = true } else { whole = a }
                index += 1
            }
            var fractionDigits: [UInt8] = []
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                while index < bytes.count, let digit = bytes[index].decimalDigit {
                    fractionDigits.append(digit)
                    index += 1
                }
                guard !fractionDigits.isEmpty else {
                    throw ValidationError(field: field, message: "duration \(Quoting.quote(text)) has a '.' without digits after it")
                }
            }
            guard sawDigit || !fractionDigits.isEmpty else {
                throw ValidationError(field: field, message: "duration \(Quoting.quote(text)) must be a number followed by a unit (ns, us, ms, s, m, h, d)")
            }
            // Unit: the longest run of letters.
            let unitStart = index
            while index < bytes.count, bytes[index].isASCIILetter { index += 1 }
            let unitText = String(decoding: bytes[unitStart..<index], as: UTF8.self)
            guard !unitText.isEmpty else {
                if index < bytes.count {
                    throw ValidationError(field: field, message: "duration \(Quoting.quote(text)) contains an unexpected character")
                }
                throw ValidationError(field: field, message: "duration \(Quoting.quote(text)) is missing a unit (ns, us, ms, s, m, h, d)")
            }
            guard let unit = units.first(where: { $0.name == unitText }) else {
                throw ValidationError(field: field, message: "unknown unit \(Quoting.quote(unitText)) in duration \(Quoting.quote(text)); use ns, us, ms, s, m, h or d")
            }
            if wholeOverflow { throw overflow }
            let (wholeNanos, o1) = whole.multipliedReportingOverflow(by: unit.nanoseconds)
            if o1 { throw overflow }
            // Fraction: exact decimal arithmetic, truncated to whole nanoseconds.
            var fractionNanos: Int64 = 0
            var scale = unit.nanoseconds
            for digit in fractionDigits {
                // Every unit but ns is a multiple of 10 ns; stop at 1 ns precision.
                guard scale % 10 == 0 else { break }
                scale /= 10
                fractionNanos += Int64(digit) * scale
            }
            let (groupNanos, o2) = wholeNanos.addingReportingOverflow(fractionNanos)
            if o2 { throw overflow }
            let (sum, o3) = total.addingReportingOverflow(groupNanos)
            if o3 { throw overflow }
            total = sum
        }
        return .nanoseconds(total)
    }

    /// Parses `text` and requires a duration greater than zero.
    public static func parsePositive(_ text: String, field: String) throws(ValidationError) -> Duration {
        let value = try parse(text, field: field)
        guard value > .zero else {
            throw ValidationError(field: field, message: "duration must be greater than zero")
        }
        return value
    }

    /// Formats a duration so that ``parse(_:field:)`` reads it back exactly.
    ///
    /// Examples: `0s`, `250ms`, `1.5s`, `2m`, `1m30s`, `1h30m`, `1d12h`,
    /// `500us`. Negative durations get a leading `-` (they never parse back).
    /// Durations beyond `Int64.max` nanoseconds are clamped.
    public static func format(_ duration: Duration) -> String {
        let nanos = duration.nanosecondsClamped
        if nanos == 0 { return "0s" }
        if nanos < 0 {
            return "-" + format(.nanoseconds(nanos == .min ? .max : -nanos))
        }
        var rest = nanos
        var out = ""
        for (name, size) in [("d", Int64(86_400_000_000_000)), ("h", 3_600_000_000_000), ("m", 60_000_000_000)] {
            let count = rest / size
            if count > 0 {
                out += "\(count)\(name)"
                rest -= count * size
            }
        }
        guard rest > 0 else { return out }
        let second: Int64 = 1_000_000_000
        let milli: Int64 = 1_000_000
        if rest >= second {
            out += decimal(rest, unit: second) + "s"
        } else if rest >= milli {
            out += decimal(rest, unit: milli) + "ms"
        } else if rest >= 1_000 {
            out += decimal(rest, unit: 1_000) + "us"
        } else {
            out += "\(rest)ns"
        }
        return out
    }

    /// `value / unit` as a decimal with trailing zeros removed.
    private static func decimal(_ value: Int64, unit: Int64) -> String {
        let whole = value / unit
        var fraction = value % unit
        guard fraction != 0 else { return "\(whole)" }
        var digits = ""
        var scale = unit
        while fraction != 0 && scale > 1 {
            scale /= 10
            digits.append(Character(String(fraction / scale)))
            fraction %= scale
        }
        return "\(whole).\(digits)"
    }
}

extension UInt8 {
    var decimalDigit: UInt8? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) ? self - UInt8(ascii: "0") : nil
    }

    var isASCIILetter: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }

    var isASCIIWhitespace: Bool {
        self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D
    }
}

extension String {
    /// The string without leading and trailing ASCII spaces, tabs and line breaks.
    func trimmingWhitespace() -> String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, bytes[start].isASCIIWhitespace { start += 1 }
        while end > start, bytes[end - 1].isASCIIWhitespace { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
