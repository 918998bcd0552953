/// Writes spans as an OTLP `ExportTraceServiceRequest` in protobuf, the body of an
/// OTLP/HTTP export (`Content-Type: application/x-protobuf`). Only the messages and fields
/// Courier sends: ExportTraceServiceRequest → ResourceSpans (Resource) → ScopeSpans
/// (InstrumentationScope) → Span with attributes, events, links and status. Field numbers
/// are those of opentelemetry-proto's `collector/trace/v1/trace_service.proto`,
/// `trace/v1/trace.proto`, `resource/v1/resource.proto` and `common/v1/common.proto`; the
/// tests decode the output with the official Python package. Pure.
public enum OTLPTraceEncoder {
    /// The request body for `spans`, all under one resource and one instrumentation scope.
    /// Every message is written in place in one buffer (``ProtobufWriter/message(_:_:)``):
    /// a span costs no buffer of its own, which at 100% sampling was most of the encoder's
    /// allocations.
    public static func encode(_ spans: [SpanData], resource: [SpanData.Attribute], scopeName: String,
                              scopeVersion: String) -> [UInt8] {
        var request = ProtobufWriter()
        request.reserve(256 + spans.count * 512)
        request.message(1) { resourceSpans in
            resourceSpans.message(1) { resourceMessage in
                for attribute in resource { resourceMessage.message(1) { encode(attribute, into: &$0) } }
            }
            resourceSpans.message(2) { scopeSpans in
                scopeSpans.message(1) { scope in
                    scope.string(1, scopeName)
                    scope.string(2, scopeVersion)
                }
                for span in spans { scopeSpans.message(2) { encode(span, into: &$0) } }
            }
        }
        return request.bytes
    }

    static func encode(_ span: SpanData, into w: inout ProtobufWriter) {
        w.traceID(1, span.context)
        w.bigEndian(2, span.context.spanID)
        if let state = span.traceState, !state.isEmpty { w.string(3, state) }
        if let parent = span.parentSpanID { w.bigEndian(4, parent) }
        w.string(5, span.name)
        w.varint(6, UInt64(span.kind.rawValue))
        w.fixed64(7, span.startUnixNano)
        w.fixed64(8, span.endUnixNano)
        for attribute in span.attributes { w.message(9) { encode(attribute, into: &$0) } }
        for event in span.events {
            w.message(11) { e in
                e.fixed64(1, event.timeUnixNano)
                e.string(2, event.name)
                for attribute in event.attributes { e.message(3) { encode(attribute, into: &$0) } }
            }
        }
        for link in span.links {
            w.message(13) { l in
                l.traceID(1, link.context)
                l.bigEndian(2, link.context.spanID)
                if let state = link.traceState, !state.isEmpty { l.string(3, state) }
                for attribute in link.attributes { l.message(4) { encode(attribute, into: &$0) } }
                l.fixed32(6, UInt32(link.context.flags))
            }
        }
        if span.statusCode != .unset || span.statusMessage != nil {
            w.message(15) { s in
                if let message = span.statusMessage, !message.isEmpty { s.string(2, message) }
                if span.statusCode != .unset { s.varint(3, UInt64(span.statusCode.rawValue)) }
            }
        }
        // The W3C trace flags in bits 0-7 of Span.flags.
        w.fixed32(16, UInt32(span.context.flags))
    }

    /// A `KeyValue` message's fields.
    static func encode(_ attribute: SpanData.Attribute, into keyValue: inout ProtobufWriter) {
        keyValue.string(1, attribute.key)
        keyValue.message(2) { value in
            switch attribute.value {
            case .string(let text): value.string(1, text, always: true)
            case .bool(let flag): value.varint(2, flag ? 1 : 0, always: true)
            case .int(let number): value.varint(3, UInt64(bitPattern: number), always: true)
            case .double(let number): value.fixed64(4, number.bitPattern, always: true)
            }
        }
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
        // Native strings hand over their UTF-8 bytes in one copy; appending the UTF8View
        // element by element was a fifth of the encoder's time at 100% sampling.
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { bytes.append(contentsOf: $0) }
        if copied == nil { bytes += value.utf8 }
    }

    /// A length-delimited message whose fields `body` writes in place: the body goes
    /// straight into this buffer and its length is put in front of it afterwards (one move
    /// of the body's bytes when the length takes more than one byte, none otherwise).
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, 2)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        guard length >= 0x80 else {
            bytes[lengthAt] = UInt8(length)
            return
        }
        var prefix = ProtobufWriter()
        prefix.appendVarint(UInt64(length))
        bytes.replaceSubrange(lengthAt...lengthAt, with: prefix.bytes)
    }

    /// 8 bytes, most significant first (a span id), as a length-delimited field.
    mutating func bigEndian(_ field: Int, _ value: UInt64) {
        tag(field, 2)
        bytes.append(8)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// A trace id's 16 bytes, most significant first, as a length-delimited field.
    mutating func traceID(_ field: Int, _ context: TraceContext) {
        tag(field, 2)
        bytes.append(16)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: context.traceIDHigh >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: context.traceIDLow >> UInt64(shift))) }
    }

    mutating func reserve(_ capacity: Int) { bytes.reserveCapacity(capacity) }
}
