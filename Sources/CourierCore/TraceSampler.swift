/// Which traces are recorded: the OpenTelemetry SDK samplers that `OTEL_TRACES_SAMPLER`
/// names, as a pure decision of the trace id and the parent's sampled flag.
public enum TraceSampler: Sendable, Equatable, CustomStringConvertible {
    /// Every span.
    case alwaysOn
    /// No span.
    case alwaysOff
    /// Spans whose trace id's low 64 bits fall below `ratio` × 2^64, so every span of a trace
    /// gets the same answer (as the SDKs' TraceIdRatioBased sampler).
    case traceIDRatio(Double)
    /// The parent's decision where there is a parent; `root` decides for spans without one.
    indirect case parentBased(root: TraceSampler)

    /// Whether the span of trace `traceID` (its low 64 bits) is recorded; `parentSampled` is
    /// the parent's sampled flag, nil for a root span.
    public func shouldSample(traceIDLow: UInt64, parentSampled: Bool?) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio):
            if ratio >= 1 { return true }
            if ratio <= 0 { return false }
            // ratio × 2^64, computed without overflow.
            let bound = UInt64(ratio * 18_446_744_073_709_551_616.0)
            return traceIDLow < bound
        case .parentBased(let root):
            if let parentSampled { return parentSampled }
            return root.shouldSample(traceIDLow: traceIDLow, parentSampled: nil)
        }
    }

    /// The `OTEL_TRACES_SAMPLER` name.
    public var description: String {
        switch self {
        case .alwaysOn: "always_on"
        case .alwaysOff: "always_off"
        case .traceIDRatio: "traceidratio"
        case .parentBased(.alwaysOn): "parentbased_always_on"
        case .parentBased(.alwaysOff): "parentbased_always_off"
        case .parentBased: "parentbased_traceidratio"
        }
    }

    /// The names `OTEL_TRACES_SAMPLER` takes, in the specification's order.
    public static let names = ["always_on", "always_off", "traceidratio", "parentbased_always_on",
                               "parentbased_always_off", "parentbased_traceidratio"]

    /// Reads `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the ratio of the two ratio
    /// samplers, 0 to 1, default 1). Nil `name` is the specification's default,
    /// `parentbased_always_on`. Errors name the variable.
    public static func parse(name: String?, argument: String?) throws(ValidationError) -> TraceSampler {
        func ratio() throws(ValidationError) -> Double {
            guard let argument, !argument.isEmpty else { return 1 }
            return try parseRatio(argument, field: "OTEL_TRACES_SAMPLER_ARG")
        }
        switch name?.lowercased() {
        case nil, "", "parentbased_always_on": return .parentBased(root: .alwaysOn)
        case "always_on": return .alwaysOn
        case "always_off": return .alwaysOff
        case "traceidratio": return .traceIDRatio(try ratio())
        case "parentbased_always_off": return .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": return .parentBased(root: .traceIDRatio(try ratio()))
        case let other?:
            throw ValidationError(field: "OTEL_TRACES_SAMPLER",
                                  message: "must be one of \(names.joined(separator: ", ")), got \(Quoting.quote(String(other.prefix(64))))")
        }
    }

    /// A sampling ratio: a number from 0 to 1.
    public static func parseRatio(_ text: String, field: String) throws(ValidationError) -> Double {
        guard let value = Double(text.trimmingASCIISpaces), value.isFinite, (0...1).contains(value) else {
            throw ValidationError(field: field, message: "must be a number from 0 to 1, got \(Quoting.quote(String(text.prefix(64))))")
        }
        return value
    }
}

extension String {
    /// The string without leading and trailing ASCII spaces and tabs.
    var trimmingASCIISpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
