/// The duration syntax used on Courier's command lines: one or more
/// `<integer><unit>` parts in decreasing unit order, with units `d`, `h`, `m`,
/// `s` and `ms` — `250ms`, `30s`, `5m`, `2h`, `1h30m`, `7d`.
public enum DurationText {
    static let units: [(suffix: String, milliseconds: Int64)] = [
        ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Parses `text`, or returns nil when it is not a valid duration.
    /// A bare number (`30`) is rejected: the unit is always required, except for `0`,
    /// which is zero in every unit.
    public static func parse(_ text: String) -> Duration? {
        if text == "0" { return .zero }
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return nil }
        var index = 0
        var total: Int64 = 0
        var lastRank = -1
        while index < scalars.count {
            var number: Int64 = 0
            let digitsStart = index
            while index < scalars.count, let digit = asciiDigit(scalars[index]) {
                let (shifted, o1) = number.multipliedReportingOverflow(by: 10)
                let (added, o2) = shifted.addingReportingOverflow(Int64(digit))
                if o1 || o2 { return nil }
                number = added
                index += 1
            }
            guard index > digitsStart else { return nil }
            var suffix = ""
            while index < scalars.count, asciiDigit(scalars[index]) == nil {
                suffix.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard let rank = units.firstIndex(where: { $0.suffix == suffix }), rank > lastRank else {
                return nil
            }
            lastRank = rank
            let (part, o3) = number.multipliedReportingOverflow(by: units[rank].milliseconds)
            let (sum, o4) = total.addingReportingOverflow(part)
            if o3 || o4 { return nil }
            total = sum
        }
        return .milliseconds(total)
    }

    /// Formats a duration in the same syntax, to millisecond precision, using
    /// hours as the largest unit: `1h30m`, `250ms`, `0s`. Negative durations get
    /// a leading `-`.
    public static func format(_ duration: Duration) -> String {
        let components = duration.components
        var milliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        var sign = ""
        if milliseconds < 0 {
            sign = "-"
            milliseconds = -milliseconds
        }
        if milliseconds == 0 { return "0s" }
        var text = sign
        for unit in units.dropFirst() where milliseconds >= unit.milliseconds {
            text += "\(milliseconds / unit.milliseconds)\(unit.suffix)"
            milliseconds %= unit.milliseconds
        }
        return text
    }

    private static func asciiDigit(_ scalar: Unicode.Scalar) -> Int? {
        guard scalar.value >= 48, scalar.value <= 57 else { return nil }
        return Int(scalar.value - 48)
    }
}
