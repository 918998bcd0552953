import Foundation

extension Duration {
    /// Whole nanoseconds, clamped to `Int64`'s range (about ±292 years).
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let limit = Int64.max / 1_000_000_000
        if seconds > limit { return .max }
        if seconds < -limit { return .min }
        let (value, overflow) = (seconds * 1_000_000_000).addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow { return seconds > 0 ? .max : .min }
        return value
    }

    /// Whole milliseconds, truncated toward zero and clamped to `Int64`.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ms, o1) = seconds.multipliedReportingOverflow(by: 1_000)
        if o1 { return seconds > 0 ? .max : .min }
        let (value, o2) = ms.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        if o2 { return seconds > 0 ? .max : .min }
        return value
    }

    /// Milliseconds as a `Double`, keeping fractions (for metrics and histograms).
    public var millisecondsDouble: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }

    /// Seconds as a `TimeInterval`, for `Date` arithmetic.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// A duration from a `TimeInterval`, rounded to whole nanoseconds.
    /// Non-finite intervals become zero; huge ones are clamped.
    public init(timeInterval: TimeInterval) {
        guard timeInterval.isFinite else { self = .zero; return }
        let nanos = (timeInterval * 1e9).rounded()
        if nanos >= 9.2e18 { self = .nanoseconds(Int64.max) }
        else if nanos <= -9.2e18 { self = .nanoseconds(Int64.min) }
        else { self = .nanoseconds(Int64(nanos)) }
    }

    /// The text ``DurationParser/format(_:)`` produces, e.g. `1.5s`.
    public var formatted: String { DurationParser.format(self) }

    /// `self * factor`, computed in nanoseconds, clamped to `0...cap`.
    func scaled(by factor: Double, cap: Duration) -> Duration {
        let capNanos = Double(cap.nanosecondsClamped)
        let value = Double(nanosecondsClamped) * factor
        guard value.isFinite, value < capNanos else { return cap }
        return value <= 0 ? .zero : .nanoseconds(Int64(value))
    }
}

extension Date {
    /// This date moved forward by `duration`.
    public func adding(_ duration: Duration) -> Date {
        addingTimeInterval(duration.timeInterval)
    }

    /// The time from `earlier` to this date as a `Duration` (negative if `earlier` is later).
    public func duration(since earlier: Date) -> Duration {
        Duration(timeInterval: timeIntervalSince(earlier))
    }
}
