/// Writes spans as an OTLP `ExportTraceServiceRequest` in protobuf, the body of an
/// OTLP/HTTP export (`Content-Type: application/x-protobuf`). Only the messages and fields
/// Courier sends: ExportTraceServiceRequest → ResourceSpans (Resource) → ScopeSpans
/// (InstrumentationScope) → Span with attributes, events, links and status. Field numbers
/// are those of opentelemetry-proto's `collector/trace/v1/trace_service.proto`,
/// `trace/v1/trace.proto`, `resource/v1/resource.proto` and `common/v1/common.proto`; the
/// tests decode the output with the official Python package. Pure.
public enum OTLPTraceEncoder {
    /// The request body for `spans`, all under one resource and one instrumentation scope.
    public static func encode(_ spans: [SpanData], resource: [SpanData.Attribute], scopeName: String,
                              scopeVersion: String) -> [UInt8] {
        var scope = ProtobufWriter()
        scope.string(1, scopeName)
        scope.string(2, scopeVersion)

        var scopeSpans = ProtobufWriter()
        scopeSpans.message(1, scope)
        for span in spans { scopeSpans.message(2, encode(span)) }

        var resourceMessage = ProtobufWriter()
        for attribute in resource { resourceMessage.message(1, encode(attribute)) }

        var resourceSpans = ProtobufWriter()
        resourceSpans.message(1, resourceMessage)
        resourceSpans.message(2, scopeSpans)

        var request = ProtobufWriter()
        request.message(1, resourceSpans)
        return request.bytes
    }

    static func encode(_ span: SpanData) -> ProtobufWriter {
        var w = ProtobufWriter()
        w.data(1, traceID(span.context))
        w.data(2, bigEndian(span.context.spanID))
        if let state = span.traceState, !state.isEmpty { w.string(3, state) }
        if let parent = span.parentSpanID { w.data(4, bigEndian(parent)) }
        w.string(5, span.name)
        w.varint(6, UInt64(span.kind.rawValue))
        w.fixed64(7, span.startUnixNano)
        w.fixed64(8, span.endUnixNano)
        for attribute in span.attributes { w.message(9, encode(attribute)) }
        for event in span.events {
            var e = ProtobufWriter()
            e.fixed64(1, event.timeUnixNano)
            e.string(2, event.name)
            for attribute in event.attributes { e.message(3, encode(attribute)) }
            w.message(11, e)
        }
        for link in span.links {
            var l = ProtobufWriter()
            l.data(1, traceID(link.context))
            l.data(2, bigEndian(link.context.spanID))
            if let state = link.traceState, !state.isEmpty { l.string(3, state) }
            for attribute in link.attributes { l.message(4, encode(attribute)) }
            l.fixed32(6, UInt32(link.context.flags))
            w.message(13, l)
        }
        if span.statusCode != .unset || span.statusMessage != nil {
            var s = ProtobufWriter()
            if let message = span.statusMessage, !message.isEmpty { s.string(2, message) }
            if span.statusCode != .unset { s.varint(3, UInt64(span.statusCode.rawValue)) }
            w.message(15, s)
        }
        // The W3C trace flags in bits 0-7 of Span.flags.
        w.fixed32(16, UInt32(span.context.flags))
        return w
    }

    static func encode(_ attribute: SpanData.Attribute) -> ProtobufWriter {
        var value = ProtobufWriter()
        switch attribute.value {
        case .string(let text): value.string(1, text, always: true)
        case .bool(let flag): value.varint(2, flag ? 1 : 0, always: true)
        case .int(let number): value.varint(3, UInt64(bitPattern: number), always: true)
        case .double(let number): value.fixed64(4, number.bitPattern, always: true)
        }
        var keyValue = ProtobufWriter()
        keyValue.string(1, attribute.key)
        keyValue.message(2, value)
        return keyValue
    }

    static func traceID(_ context: TraceContext) -> [UInt8] { bigEndian(context.traceIDHigh) + bigEndian(context.traceIDLow) }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// The protobuf wire format, for writing: tags, varints, fixed-width numbers and
/// length-delimited fields. Fields at their default are skipped (proto3), unless `always`.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    private mutating func tag(_ field: Int, _ wireType: UInt64) { appendVarint(UInt64(field) << 3 | wireType) }

    private mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func varint(_ field: Int, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        tag(field, 0)
        appendVarint(value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        tag(field, 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, 5)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func data(_ field: Int, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        tag(field, 2)
        appendVarint(UInt64(value.count))
        bytes += value
    }

    mutating func string(_ field: Int, _ value: String, always: Bool = false) {
        guard !value.isEmpty || always else { return }
        tag(field, 2)
        appendVarint(UInt64(value.utf8.count))
        bytes += value.utf8
    }

    mutating func message(_ field: Int, _ value: ProtobufWriter) {
        tag(field, 2)
        appendVarint(UInt64(value.bytes.count))
        bytes += value.bytes
    }
}
