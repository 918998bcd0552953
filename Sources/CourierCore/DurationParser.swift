/// The one duration grammar of Courier: every flag (`jobctl`, `jobworker`),
/// every `COURIER_*` variable and the Swift API read durations with it.
///
/// Grammar: `0`, or one or more `<number><unit>` groups with no spaces between
/// them (surrounding whitespace is ignored), units in decreasing order and each at
/// most once. `<number>` is digits with an optional `.fraction` (`1.5s`, `.5s`);
/// `<unit>` is `d` (24 hours), `h`, `m`, `s`, `ms`, `us` or `ns`. Examples: `250ms`,
/// `30s`, `5m`, `2h`, `1h30m`, `1.5s`, `7d`.
///
/// Range: `0` to ``maximum`` (`Int64.max` nanoseconds, `106751d23h47m16.854775807s`,
/// about 292 years). Signs, bare numbers (other than `0`), unknown or repeated units,
/// units out of order and larger totals are refused with an error naming the field.
/// Precision is one nanosecond; finer fractions are truncated.
public enum DurationParser {
    /// The largest duration accepted: `Int64.max` nanoseconds (about 292 years).
    public static let maximum: Duration = .nanoseconds(Int64.max)

    /// The units, largest first: their order is the order the grammar requires.
    static let units: [(name: String, nanoseconds: Int64)] = [
        ("d", 86_400_000_000_000),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ]

    static let unitList = "d, h, m, s, ms, us, ns"

    /// Why a text is not a duration.
    public enum Failure: Error, Sendable, Equatable {
        case empty
        case negative
        /// Not `<number><unit>...`; the detail says where it went wrong.
        case malformed(String)
        case unknownUnit(String)
        /// A unit repeated or after a smaller one (`30m1h`, `1h1h`).
        case unitOutOfOrder(String)
        /// Above ``DurationParser/maximum``.
        case tooLarge

        /// The explanation for a person, quoting `text`.
        public func message(for text: String) -> String {
            let quoted = Quoting.quote(text)
            switch self {
            case .empty: return "empty duration; write e.g. 250ms, 30s, 5m, 2h, 1h30m"
            case .negative: return "duration \(quoted) must not be negative"
            case .malformed(let detail): return "duration \(quoted) \(detail)"
            case .unknownUnit(let unit):
                return "unknown unit \(Quoting.quote(unit)) in duration \(quoted); use \(DurationParser.unitList)"
            case .unitOutOfOrder(let unit):
                return "duration \(quoted) repeats \(Quoting.quote(unit)) or has it after a smaller unit; write units largest first, each once (1h30m)"
            case .tooLarge: return "duration \(quoted) is too large (at most \(DurationParser.format(DurationParser.maximum)), about 292 years)"
            }
        }
    }

    /// Parses `text`; errors name `field`.
    public static func parse(_ text: String, field: String) throws(ValidationError) -> Duration {
        switch read(text) {
        case .success(let value): return value
        case .failure(let failure): throw ValidationError(field: field, message: failure.message(for: text))
        }
    }

    /// Parses `text` and requires a duration greater than zero.
    public static func parsePositive(_ text: String, field: String) throws(ValidationError) -> Duration {
        let value = try parse(text, field: field)
        guard value > .zero else {
            throw ValidationError(field: field, message: "duration must be greater than zero")
        }
        return value
    }

    /// Reads `text` by the grammar above, without naming a field (callers that word
    /// their own errors, such as the command-line parser, switch over the failure).
    public static func read(_ text: String) -> Result<Duration, Failure> {
        var copy = text
        return copy.withUTF8 { read(bytes: $0) }
    }

    static func read(bytes all: UnsafeBufferPointer<UInt8>) -> Result<Duration, Failure> {
        var start = 0
        var end = all.count
        while start < end, all[start].isASCIIWhitespace { start += 1 }
        while end > start, all[end - 1].isASCIIWhitespace { end -= 1 }
        guard start < end else { return .failure(.empty) }
        if all[start] == UInt8(ascii: "-") { return .failure(.negative) }
        if end - start == 1, all[start] == UInt8(ascii: "0") { return .success(.zero) }
        var index = start
        var total: Int64 = 0
        var nextUnit = 0  // the index in `units` the next group may use, or any after it
        var overflow = false
        while index < end {
            // Number: digits, optional fraction.
            var whole: Int64 = 0
            var sawDigit = false
            while index < end, let digit = all[index].decimalDigit {
                sawDigit = true
                let (m, o1) = whole.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(digit))
                if o1 || o2 { overflow = true } else { whole = a }
                index += 1
            }
            let fractionStart = index + 1
            var fractionEnd = fractionStart
            if index < end, all[index] == UInt8(ascii: ".") {
                index += 1
                while index < end, all[index].decimalDigit != nil { index += 1 }
                fractionEnd = index
                guard fractionEnd > fractionStart else { return .failure(.malformed("has a '.' without digits after it")) }
            }
            guard sawDigit || fractionEnd > fractionStart else {
                return .failure(.malformed("must be a number followed by a unit (\(unitList))"))
            }
            // Unit: the longest run of letters.
            let unitStart = index
            while index < end, all[index].isASCIILetter { index += 1 }
            guard index > unitStart else {
                if index < end { return .failure(.malformed("contains an unexpected character")) }
                return .failure(.malformed("is missing a unit (\(unitList))"))
            }
            let unitBytes = UnsafeBufferPointer(rebasing: all[unitStart..<index])
            guard let rank = units.firstIndex(where: { $0.name.utf8.elementsEqual(unitBytes) }) else {
                return .failure(.unknownUnit(String(decoding: unitBytes, as: UTF8.self)))
            }
            guard rank >= nextUnit else { return .failure(.unitOutOfOrder(units[rank].name)) }
            nextUnit = rank + 1
            let size = units[rank].nanoseconds
            let (wholeNanos, o1) = whole.multipliedReportingOverflow(by: size)
            // Fraction: exact decimal arithmetic, truncated to whole nanoseconds.
            var fractionNanos: Int64 = 0
            var scale = size
            var digitIndex = fractionStart
            while digitIndex < fractionEnd, scale % 10 == 0 {
                scale /= 10
                fractionNanos += Int64(all[digitIndex] - UInt8(ascii: "0")) * scale
                digitIndex += 1
            }
            let (groupNanos, o2) = wholeNanos.addingReportingOverflow(fractionNanos)
            let (sum, o3) = total.addingReportingOverflow(groupNanos)
            if o1 || o2 || o3 { overflow = true }
            total = sum
        }
        return overflow ? .failure(.tooLarge) : .success(.nanoseconds(total))
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
        for (name, size) in units.prefix(3) {
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
