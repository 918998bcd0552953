import CourierCore
import Foundation

/// How a worker traces its attempts (OpenTelemetry spans over OTLP/HTTP protobuf), read from
/// the standard `OTEL_*` variables and jobworker's flags. A worker without one (no endpoint
/// configured) builds no span at all.
public struct TracingConfiguration: Sendable, Equatable {
    /// Where batches are POSTed: the traces endpoint itself (`…/v1/traces`).
    public var endpoint: String
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`), such as a collector's API key.
    public var headers: [HTTPHeader] = []
    /// The resource's attributes; `service.name` first.
    public var resource: [SpanData.Attribute] = [SpanData.Attribute("service.name", .string("jobworker"))]
    /// Which traces are recorded. Default `parentbased_always_on`, the specification's.
    public var sampler: TraceSampler = .parentBased(root: .alwaysOn)
    /// Whether an attempt's span is the child of the enqueuing span (`--trace-child-of-enqueue`);
    /// by default it only links to it, as the messaging conventions recommend.
    public var childOfEnqueue = false
    /// The most spans waiting for export; more are dropped and counted. Default 2048 (`OTEL_BSP_MAX_QUEUE_SIZE`).
    public var maxQueueSize = 2048
    /// The most spans in one export. Default 512 (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    public var maxBatchSize = 512
    /// How long spans may wait for a batch to fill. Default 5 s (`OTEL_BSP_SCHEDULE_DELAY`, in ms).
    public var scheduleDelay: Duration = .seconds(5)
    /// How long one export may take. Default 10 s (`OTEL_EXPORTER_OTLP_TIMEOUT`, in ms).
    public var exportTimeout: Duration = .seconds(10)
    /// Tries per batch when the collector is unreachable or answers 429, 502, 503 or 504. Default 3.
    public var exportAttempts = 3

    public init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// The configuration the environment and flags describe, or nil when no endpoint is set
    /// (or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`): tracing is off.
    /// - Parameters:
    ///   - endpointFlag: `--otlp-endpoint`, a base URL like `OTEL_EXPORTER_OTLP_ENDPOINT`; it wins.
    ///   - sampleRatioFlag: `--trace-sample-ratio`: `parentbased_traceidratio` with that ratio.
    /// Errors name the variable or flag.
    public static func read(environment env: [String: String], endpointFlag: String? = nil, sampleRatioFlag: Double? = nil,
                            childOfEnqueue: Bool = false) throws(ValidationError) -> TracingConfiguration? {
        func value(_ name: String) -> String? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if value("OTEL_SDK_DISABLED")?.lowercased() == "true" { return nil }
        if let exporter = value("OTEL_TRACES_EXPORTER")?.lowercased() {
            if exporter == "none" { return nil }
            guard exporter == "otlp" else {
                throw ValidationError(field: "OTEL_TRACES_EXPORTER", message: "must be otlp or none, got \(Quoting.quote(exporter))")
            }
        }
        let endpoint: String
        if let flag = endpointFlag, !flag.isEmpty {
            endpoint = try tracesURL(base: flag, field: "--otlp-endpoint")
        } else if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = try checkedURL(traces, field: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = try tracesURL(base: base, field: "OTEL_EXPORTER_OTLP_ENDPOINT")
        } else {
            return nil
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let protocolName = value(name), protocolName != "http/protobuf" {
                throw ValidationError(field: name, message: "must be http/protobuf (the one protocol jobworker exports), got \(Quoting.quote(protocolName))")
            }
        }
        var configuration = TracingConfiguration(endpoint: endpoint)
        configuration.headers = try keyValueList(value("OTEL_EXPORTER_OTLP_HEADERS"), field: "OTEL_EXPORTER_OTLP_HEADERS")
            .map { HTTPHeader(name: $0.key, value: $0.value) }
        for (key, headerValue) in try keyValueList(value("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), field: "OTEL_EXPORTER_OTLP_TRACES_HEADERS") {
            configuration.headers.removeAll { $0.name.caseInsensitiveCompare(key) == .orderedSame }
            configuration.headers.append(HTTPHeader(name: key, value: headerValue))
        }
        var resource = try keyValueList(value("OTEL_RESOURCE_ATTRIBUTES"), field: "OTEL_RESOURCE_ATTRIBUTES")
        let serviceName = value("OTEL_SERVICE_NAME") ?? resource.first(where: { $0.key == "service.name" })?.value ?? "jobworker"
        resource.removeAll { $0.key == "service.name" }
        configuration.resource = [SpanData.Attribute("service.name", .string(serviceName))]
            + resource.map { SpanData.Attribute($0.key, .string($0.value)) }
        configuration.sampler = try TraceSampler.parse(name: value("OTEL_TRACES_SAMPLER"), argument: value("OTEL_TRACES_SAMPLER_ARG"))
        if let ratio = sampleRatioFlag { configuration.sampler = .parentBased(root: .traceIDRatio(ratio)) }
        configuration.childOfEnqueue = childOfEnqueue
        configuration.maxQueueSize = try integer(value("OTEL_BSP_MAX_QUEUE_SIZE"), field: "OTEL_BSP_MAX_QUEUE_SIZE", range: 1...1_000_000)
            ?? configuration.maxQueueSize
        configuration.maxBatchSize = min(configuration.maxQueueSize,
                                         try integer(value("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), field: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                                                     range: 1...100_000) ?? configuration.maxBatchSize)
        if let ms = try integer(value("OTEL_BSP_SCHEDULE_DELAY"), field: "OTEL_BSP_SCHEDULE_DELAY", range: 1...3_600_000) {
            configuration.scheduleDelay = .milliseconds(ms)
        }
        let timeoutName = value("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") != nil ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT"
        if let ms = try integer(value(timeoutName), field: timeoutName, range: 1...600_000) {
            configuration.exportTimeout = .milliseconds(ms)
        }
        return configuration
    }

    /// `base` with `/v1/traces` appended (the OTLP/HTTP rule for `OTEL_EXPORTER_OTLP_ENDPOINT`).
    static func tracesURL(base: String, field: String) throws(ValidationError) -> String {
        let checked = try checkedURL(base, field: field)
        return checked.hasSuffix("/") ? checked + "v1/traces" : checked + "/v1/traces"
    }

    static func checkedURL(_ text: String, field: String) throws(ValidationError) -> String {
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: text), url.host != nil,
              text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ValidationError(field: field, message: "must be an http or https URL such as http://localhost:4318")
        }
        return text
    }

    /// A W3C-baggage-like list `key1=value1,key2=value2` with percent-encoded values, as
    /// `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES` are written.
    static func keyValueList(_ text: String?, field: String) throws(ValidationError) -> [(key: String, value: String)] {
        guard let text else { return [] }
        var result: [(key: String, value: String)] = []
        for member in text.split(separator: ",") {
            guard let equals = member.firstIndex(of: "=") else {
                throw ValidationError(field: field, message: "must be a list of key=value pairs separated by commas")
            }
            let key = member[..<equals].trimmingCharacters(in: .whitespaces)
            let raw = member[member.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), let decoded = raw.removingPercentEncoding,
                  decoded.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
                throw ValidationError(field: field, message: "must be a list of key=value pairs separated by commas (values percent-encoded)")
            }
            result.append((key, decoded))
        }
        return result
    }

    static func integer(_ text: String?, field: String, range: ClosedRange<Int>) throws(ValidationError) -> Int? {
        guard let text else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw ValidationError(field: field, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
