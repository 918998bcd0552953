import Foundation

/// Builds a page in the Prometheus text exposition format, version 0.0.4:
/// for each metric family a `# HELP` and a `# TYPE` line, then its samples as
/// `name{label="value",...} value`, one per line.
///
/// Write each family with one call to ``family(_:_:help:_:)`` so its samples stay together,
/// as the format requires.
public struct PrometheusText: Sendable {
    /// The media type of the page.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The metric types of the text format.
    public enum MetricType: String, Sendable {
        case counter, gauge, histogram, summary, untyped
    }

    /// One sample line of a family: `name` may carry a suffix such as `_bucket`.
    public struct Sample: Sendable, Equatable {
        public var name: String
        public var labels: [(String, String)]
        public var value: Double

        public init(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
            self.name = name
            self.labels = labels
            self.value = value
        }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.name == b.name && a.value.bitPattern == b.value.bitPattern
                && a.labels.map(\.0) == b.labels.map(\.0) && a.labels.map(\.1) == b.labels.map(\.1)
        }
    }

    /// The page so far.
    public private(set) var text = ""
    private var written = Set<String>()

    public init() {}

    /// Writes a family's HELP and TYPE lines followed by its samples.
    /// - Precondition: `name` is a valid metric name and was not written before.
    public mutating func family(_ name: String, _ type: MetricType, help: String, _ samples: [Sample]) {
        precondition(Self.isValidName(name), "invalid metric name \(name)")
        precondition(written.insert(name).inserted, "metric family \(name) written twice")
        text += "# HELP \(name) \(Self.escapeHelp(help))\n"
        text += "# TYPE \(name) \(type.rawValue)\n"
        for sample in samples {
            precondition(sample.name.hasPrefix(name), "sample \(sample.name) does not belong to family \(name)")
            text += Self.line(sample)
        }
    }

    /// Writes a family of one unlabelled sample.
    public mutating func single(_ name: String, _ type: MetricType, help: String, _ value: Double) {
        family(name, type, help: help, [Sample(name, [], value)])
    }

    /// The samples of one histogram series: cumulative `_bucket{le=...}` lines ending in
    /// `le="+Inf"`, then `_sum` and `_count`.
    public static func histogramSamples(_ name: String, labels: [(String, String)] = [],
                                        buckets: [(le: Double, count: Int)], sum: Double, count: Int) -> [Sample] {
        var samples = buckets.map { Sample(name + "_bucket", labels + [("le", format($0.le))], Double($0.count)) }
        if buckets.last?.le != .infinity {
            samples.append(Sample(name + "_bucket", labels + [("le", "+Inf")], Double(count)))
        }
        samples.append(Sample(name + "_sum", labels, sum))
        samples.append(Sample(name + "_count", labels, Double(count)))
        return samples
    }

    static func line(_ sample: Sample) -> String {
        var line = sample.name
        if !sample.labels.isEmpty {
            line += "{" + sample.labels.map { "\($0.0)=\"\(escapeLabelValue($0.1))\"" }.joined(separator: ",") + "}"
        }
        return line + " " + format(sample.value) + "\n"
    }

    /// A sample value as the format writes it: whole numbers without a fraction,
    /// `+Inf`, `-Inf` and `NaN` spelled out.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "+Inf" }
        if value == -.infinity { return "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Label values escape backslash, double quote and line feed.
    public static func escapeLabelValue(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// HELP text escapes backslash and line feed.
    public static func escapeHelp(_ help: String) -> String {
        help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func letter(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) || ("A"..."Z").contains(s) || s == "_" || s == ":" }
        return letter(first) && name.unicodeScalars.allSatisfy { letter($0) || ("0"..."9").contains($0) }
    }
}
