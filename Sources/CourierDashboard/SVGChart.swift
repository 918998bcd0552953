import Foundation

/// Charts drawn as inline SVG: pure functions from numbers to path data, so the page
/// and the live update (which sets the same `d` attribute) draw the same thing.
public enum SVGChart {
    /// The drawing area the paths are computed for (the SVG's viewBox).
    public static let width = 600.0
    public static let height = 120.0

    /// A polyline through `values`, spread evenly from left to right and scaled so that
    /// `maximum` (default: the largest value, at least 1) touches the top. Coordinates
    /// have one decimal. An empty series is an empty path.
    public static func linePath(_ values: [Int], maximum: Int? = nil, width: Double = width, height: Double = height) -> String {
        guard !values.isEmpty else { return "" }
        let top = Double(max(maximum ?? values.max() ?? 1, 1))
        let step = values.count > 1 ? width / Double(values.count - 1) : 0
        return values.enumerated().map { index, value in
            let x = Double(index) * step
            let y = height - min(Double(max(value, 0)) / top, 1) * height
            return (index == 0 ? "M" : "L") + format(x) + "," + format(y)
        }.joined(separator: " ")
    }

    /// Per-minute values for the last `minutes` minutes ending at `now`'s minute, with 0
    /// for minutes that have no row (the stats table keeps only minutes with attempts).
    public static func perMinute(_ points: [(minute: Date, value: Int)], minutes: Int, now: Date) -> [Int] {
        let end = floor(now.timeIntervalSince1970 / 60)
        var values = [Int](repeating: 0, count: minutes)
        for point in points {
            let index = minutes - 1 - Int(end - floor(point.minute.timeIntervalSince1970 / 60))
            if values.indices.contains(index) { values[index] += point.value }
        }
        return values
    }

    /// The SVG element for two series (succeeded and failed attempts per minute).
    static func throughput(succeeded: [Int], failed: [Int]) -> HTML {
        let top = max(succeeded.max() ?? 0, failed.max() ?? 0, 1)
        return """
            <svg class="chart" viewBox="0 0 \(Int(width)) \(Int(height))" preserveAspectRatio="none" role="img" \
            aria-label="attempts per minute, last hour">\
            <path id="chart-ok" class="ok" d="\(linePath(succeeded, maximum: top))"/>\
            <path id="chart-failed" class="failed" d="\(linePath(failed, maximum: top))"/></svg>
            """
    }

    private static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(format: "%.1f", rounded)
    }
}
