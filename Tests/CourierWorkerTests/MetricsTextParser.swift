import Foundation

/// A strict reader of the Prometheus text format 0.0.4, written independently of
/// the code that produces it, so the tests check the page against the format
/// rather than against the producer's own idea of it.
struct MetricsExposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Family {
        var name: String
        var help: String?
        var type: String?
        var samples: [Sample] = []
    }

    private(set) var families: [String: Family] = [:]
    private(set) var order: [String] = []

    /// Parses `text`; throws on the first line that breaks the format, naming it.
    init(parsing text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else { throw MetricsTestError("the page must end with a line feed") }
        var current: String?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let number = index + 1
            func fail(_ why: String) -> MetricsTestError { MetricsTestError("line \(number) \(String(line).debugDescription): \(why)") }
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard Self.isMetricName(name) else { throw fail("bad metric name") }
                if current != name {
                    guard families[name] == nil else { throw fail("family \(name) appears in two places") }
                    families[name] = Family(name: name)
                    order.append(name)
                    current = name
                }
                let rest = parts.count > 1 ? String(parts[1]) : ""
                if line.hasPrefix("# HELP ") {
                    guard families[name]!.help == nil else { throw fail("second HELP") }
                    families[name]!.help = rest
                } else {
                    guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(rest) else { throw fail("bad type") }
                    guard families[name]!.type == nil, families[name]!.samples.isEmpty else { throw fail("TYPE must come before samples, once") }
                    families[name]!.type = rest
                }
                continue
            }
            if line.hasPrefix("#") || line.isEmpty { continue }
            let sample = try Self.parseSample(String(line), fail: fail)
            guard let family = current, Self.belongs(sample.name, to: family, type: families[family]?.type) else {
                throw fail("sample outside its family's block")
            }
            families[family]!.samples.append(sample)
        }
    }

    /// The value of the sample `name` whose labels include `labels`; nil if absent.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        for family in families.values {
            if let sample = family.samples.first(where: { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }) {
                return sample.value
            }
        }
        return nil
    }

    /// Checks the rules beyond syntax: HELP and TYPE for every family, counter names end
    /// in `_total`, histogram buckets are cumulative and end with `+Inf` equal to `_count`.
    func checkConventions() throws {
        for name in order {
            let family = families[name]!
            guard family.help != nil, let type = family.type else { throw MetricsTestError("\(name) lacks HELP or TYPE") }
            if type == "counter" {
                guard name.hasSuffix("_total") else { throw MetricsTestError("counter \(name) must end in _total") }
                guard family.samples.allSatisfy({ $0.value >= 0 }) else { throw MetricsTestError("counter \(name) is negative") }
            }
            if type == "histogram" {
                var series: [String: [(Double, Double)]] = [:]
                var counts: [String: Double] = [:]
                for sample in family.samples {
                    var others = sample.labels
                    others["le"] = nil
                    let key = others.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                    if sample.name == name + "_bucket" {
                        guard let le = sample.labels["le"], let bound = Self.number(le) else {
                            throw MetricsTestError("\(name) bucket without a numeric le")
                        }
                        series[key, default: []].append((bound, sample.value))
                    } else if sample.name == name + "_count" {
                        counts[key] = sample.value
                    }
                }
                for (key, buckets) in series {
                    guard buckets.last?.0 == .infinity else { throw MetricsTestError("\(name){\(key)} does not end with le=+Inf") }
                    guard zip(buckets, buckets.dropFirst()).allSatisfy({ $0.0 < $1.0 && $0.1 <= $1.1 }) else {
                        throw MetricsTestError("\(name){\(key)} buckets are not ascending and cumulative")
                    }
                    guard counts[key] == buckets.last?.1 else { throw MetricsTestError("\(name){\(key)} _count differs from the +Inf bucket") }
                }
            }
        }
    }

    static func belongs(_ sample: String, to family: String, type: String?) -> Bool {
        if sample == family { return true }
        switch type {
        case "histogram": return [family + "_bucket", family + "_sum", family + "_count"].contains(sample)
        case "summary": return [family + "_sum", family + "_count"].contains(sample)
        default: return false
        }
    }

    static func isMetricName(_ name: String) -> Bool {
        name.range(of: "^[a-zA-Z_:][a-zA-Z0-9_:]*$", options: .regularExpression) != nil
    }

    static func number(_ text: String) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: Double(text)
        }
    }

    /// `name{label="value",...} value` with escapes \\ \" \n in label values.
    static func parseSample(_ line: String, fail: (String) -> MetricsTestError) throws -> Sample {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        var name = ""
        while index < scalars.count, scalars[index] != "{", scalars[index] != " " {
            name.unicodeScalars.append(scalars[index])
            index += 1
        }
        guard isMetricName(name) else { throw fail("bad metric name") }
        var labels: [String: String] = [:]
        if index < scalars.count, scalars[index] == "{" {
            index += 1
            while true {
                guard index < scalars.count else { throw fail("unterminated labels") }
                if scalars[index] == "}" { index += 1; break }
                var label = ""
                while index < scalars.count, scalars[index] != "=" { label.unicodeScalars.append(scalars[index]); index += 1 }
                guard label.range(of: "^[a-zA-Z_][a-zA-Z0-9_]*$", options: .regularExpression) != nil else { throw fail("bad label name") }
                guard index + 1 < scalars.count, scalars[index + 1] == "\"" else { throw fail("label value must be quoted") }
                index += 2
                var value = ""
                while true {
                    guard index < scalars.count else { throw fail("unterminated label value") }
                    let scalar = scalars[index]
                    if scalar == "\"" { index += 1; break }
                    if scalar == "\\" {
                        guard index + 1 < scalars.count else { throw fail("dangling escape") }
                        switch scalars[index + 1] {
                        case "\\": value += "\\"
                        case "\"": value += "\""
                        case "n": value += "\n"
                        default: throw fail("bad escape")
                        }
                        index += 2
                        continue
                    }
                    guard scalar != "\n" else { throw fail("raw line feed in label value") }
                    value.unicodeScalars.append(scalar)
                    index += 1
                }
                guard labels[label] == nil else { throw fail("label \(label) given twice") }
                labels[label] = value
                if index < scalars.count, scalars[index] == "," { index += 1 }
            }
        }
        guard index < scalars.count, scalars[index] == " " else { throw fail("expected a space before the value") }
        let rest = String(String.UnicodeScalarView(scalars[(index + 1)...])).split(separator: " ")
        guard rest.count == 1 || rest.count == 2, let value = number(String(rest[0])) else { throw fail("value is not a number") }
        if rest.count == 2 { guard Int64(rest[1]) != nil else { throw fail("bad timestamp") } }
        return Sample(name: name, labels: labels, value: value)
    }
}
