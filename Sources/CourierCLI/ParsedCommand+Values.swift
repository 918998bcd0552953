import CourierCore
import Foundation

/// Typed access to argument values. Each getter returns nil (or an empty array)
/// when the argument is absent and has no default, and throws a ``UsageError``
/// naming the argument when the value is malformed.
extension ParsedCommand {
    /// The value as an integer, optionally within `range`.
    public func int(_ name: String, range: ClosedRange<Int>? = nil) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        return try parseInt(name, text, range: range)
    }

    /// Every value of a repeatable option or positional argument as an integer.
    public func ints(_ name: String, range: ClosedRange<Int>? = nil) throws(UsageError) -> [Int] {
        var result: [Int] = []
        for text in values(name) {
            result.append(try parseInt(name, text, range: range))
        }
        return result
    }

    /// The value as a floating-point number, optionally within `range`.
    public func double(_ name: String, range: ClosedRange<Double>? = nil) throws(UsageError) -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number.isFinite, range?.contains(number) ?? true else {
            let expected = range.map { "a number from \(Self.plain($0.lowerBound)) to \(Self.plain($0.upperBound))" } ?? "a number"
            throw invalid(name, "expected \(expected), got '\(text)'")
        }
        return number
    }

    /// The value as a duration in Courier's one grammar (``DurationParser``: `250ms`,
    /// `1.5s`, `5m`, `1h30m`, `7d`), at least `minimum` and, when given, at most `maximum`.
    public func duration(_ name: String, minimum: Duration = .zero, maximum: Duration? = nil) throws(UsageError) -> Duration? {
        guard let text = value(name) else { return nil }
        let duration: Duration
        switch DurationParser.read(text) {
        case .success(let value): duration = value
        case .failure(.tooLarge):
            throw invalid(name, "expected a duration of at most \(DurationParser.format(maximum ?? DurationParser.maximum)), got '\(text)'")
        case .failure:
            throw invalid(name, "expected a duration like 250ms, 30s, 5m, 2h or 1h30m, got '\(text)'")
        }
        if duration < minimum {
            throw invalid(name, "expected a duration of at least \(DurationParser.format(minimum)), got '\(text)'")
        }
        if let maximum, duration > maximum {
            throw invalid(name, "expected a duration of at most \(DurationParser.format(maximum)), got '\(text)'")
        }
        return duration
    }

    /// `now` plus the duration of option `name` (`--in 5m`), which must land within
    /// ``Timestamp/range``; nil when the option is absent.
    public func dateAfter(_ name: String, now: Date) throws(UsageError) -> Date? {
        guard let offset = try duration(name) else { return nil }
        do {
            return try Timestamp.checked(now.adding(offset), field: "--" + name, text: value(name))
        } catch {
            throw invalid(name, error.message)
        }
    }

    /// The value as a rate: `20/s`, `300/m`, `1000/h`, or a bare number per second.
    public func rate(_ name: String) throws(UsageError) -> Rate? {
        guard let text = value(name) else { return nil }
        guard let rate = Rate.parse(text) else {
            throw invalid(name, "expected a positive rate like 20/s, 300/m or 1000/h, got '\(text)'")
        }
        return rate
    }

    /// The value as a case of a string-backed enumeration.
    public func enumValue<E: RawRepresentable & CaseIterable>(_ name: String, as type: E.Type = E.self) throws(UsageError) -> E?
    where E.RawValue == String {
        guard let text = value(name) else { return nil }
        guard let result = E(rawValue: text) else {
            let names = E.allCases.map(\.rawValue)
            var message = "expected one of \(names.joined(separator: ", ")), got '\(text)'"
            if let suggestion = Suggestions.best(for: text, among: names) {
                message += "; did you mean \(suggestion)?"
            }
            throw invalid(name, message)
        }
        return result
    }

    /// The comma-separated items of every value (`--queues a,b --queues c` gives
    /// `["a", "b", "c"]`), trimmed of spaces. An empty item is an error.
    public func list(_ name: String) throws(UsageError) -> [String] {
        var result: [String] = []
        for text in values(name) {
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = item.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty else {
                    throw invalid(name, "expected a comma-separated list without empty items, got '\(text)'")
                }
                result.append(trimmed)
            }
        }
        return result
    }

    /// The value as a point in time, in Courier's one grammar (``Timestamp``): an RFC
    /// 3339 time (`2024-05-01T12:00:00Z`, fractional seconds and offsets allowed, a
    /// space may replace the `T`), a date (`2024-05-01`, midnight UTC), `now`, or a
    /// signed offset from `now` (`-2h`, `+30m`).
    public func timestamp(_ name: String, now: Date) throws(UsageError) -> Date? {
        guard let text = value(name) else { return nil }
        do {
            return try Timestamp.parse(text, field: name, relativeTo: now)
        } catch {
            if case .failure(.malformed) = Timestamp.read(text), !text.hasPrefix("+"), !text.hasPrefix("-"), text != "now" {
                throw invalid(name, "expected a time like 2024-05-01T12:00:00Z, a date like 2024-05-01, 'now', or an offset like -2h or +30m, got '\(text)'")
            }
            throw invalid(name, error.message)
        }
    }

    private func parseInt(_ name: String, _ text: String, range: ClosedRange<Int>?) throws(UsageError) -> Int {
        guard let number = Int(text), range?.contains(number) ?? true else {
            throw invalid(name, "expected \(Self.describe(range)), got '\(text)'")
        }
        return number
    }

    static func describe(_ range: ClosedRange<Int>?) -> String {
        guard let range else { return "an integer" }
        switch (range.lowerBound, range.upperBound) {
        case (1, Int.max): return "a positive integer"
        case (0, Int.max): return "a non-negative integer"
        case (let low, Int.max): return "an integer of at least \(low)"
        case (Int.min, let high): return "an integer of at most \(high)"
        case (let low, let high): return "an integer from \(low) to \(high)"
        }
    }

    private static func plain(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
