import CourierCore

/// A pace such as `20/s`, `300/m`, `1000/h` or `5/10s`. A bare number (`20`)
/// means per second.
public struct Rate: Sendable, Equatable, CustomStringConvertible {
    /// How many events per ``interval``; always greater than zero.
    public let count: Double
    /// The interval the count is spread over; always greater than zero.
    public let interval: Duration

    /// Creates a rate; returns nil unless both parts are positive and finite.
    public init?(count: Double, per interval: Duration) {
        guard count.isFinite, count > 0, interval > .zero else { return nil }
        self.count = count
        self.interval = interval
    }

    /// Events per second.
    public var perSecond: Double {
        let components = interval.components
        let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
        return count / seconds
    }

    /// Parses `N`, `N/s`, `N/m`, `N/min`, `N/h` or `N/DURATION`.
    public static func parse(_ text: String) -> Rate? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let countText = parts.first, let count = Double(countText) else { return nil }
        var interval = Duration.seconds(1)
        if parts.count == 2 {
            var unit = String(parts[1])
            if unit == "min" { unit = "m" }
            if let first = unit.unicodeScalars.first, !(48...57).contains(first.value) {
                unit = "1" + unit
            }
            guard case .success(let parsed) = DurationParser.read(unit) else { return nil }
            interval = parsed
        }
        return Rate(count: count, per: interval)
    }

    /// `20/s`, or `5/10s` for other intervals.
    public var description: String {
        let countText = count == count.rounded() && abs(count) < 1e15 ? String(Int64(count)) : String(count)
        let intervalText = DurationParser.format(interval)
        if intervalText == "1s" { return "\(countText)/s" }
        if intervalText == "1m" { return "\(countText)/m" }
        if intervalText == "1h" { return "\(countText)/h" }
        return "\(countText)/\(intervalText)"
    }
}
