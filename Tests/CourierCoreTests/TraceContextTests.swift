@testable import CourierCore
import Testing

/// W3C Trace Context as Courier reads and writes it (TraceContext), which traces are kept
/// (TraceSampler), and the protobuf writer's wire format (the OTLP shape itself is checked
/// against the official decoder in CourierWorkerTests' TracingEndToEndTests).
@Suite struct TraceContextTests {
    static let example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// The values the SQL side is checked against too (TraceContextStoreTests).
    static let traceparents: [(String, Bool)] = [
        (example, true),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", false),
        ("00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bg-01", false),
        ("", false),
    ]

    static let tracestates: [(String, Bool)] = [
        ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true),
        ("", true),
        ("a=1,,b=2", true),
        (" a=1 ,\tb=2 ", true),
        ("tenant1@system=x y", true),
        ("1a@b=c", true),
        ("k=v" + String(repeating: ",k=v", count: 31), true),
        ("A=1", false),
        ("a=1=2", false),
        ("a=", false),
        ("1a=b", false),
        ("a=b\u{7}", false),
        ("k=v" + String(repeating: ",k=v", count: 32), false),
        ("a=" + String(repeating: "x", count: 600), false),
    ]

    @Test func readsAndRefusesTraceparentsByTheW3CRules() throws {
        for (text, valid) in Self.traceparents {
            #expect((TraceContext(traceparent: text) != nil) == valid, "\(text)")
        }
        let context = try #require(TraceContext(traceparent: Self.example))
        #expect(context.traceIDHex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.spanIDHex == "00f067aa0ba902b7")
        #expect(context.isSampled)
        #expect(context.traceparent == Self.example)
        // A later version is read, and written back as version 00.
        let later = try #require(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"))
        #expect(later.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        #expect(!later.isSampled)
    }

    @Test func errorsNameTheField() {
        #expect(throws: ValidationError(field: "--traceparent", message: TraceContext.traceparentRule)) {
            try TraceContext.parse(traceparent: "nope", field: "--traceparent")
        }
        #expect(throws: ValidationError(field: "tracestate", message: TraceContext.tracestateRule)) {
            try TraceContext.validate(tracestate: "A=1")
        }
    }

    @Test func readsTracestatesByTheW3CRules() {
        for (text, valid) in Self.tracestates {
            #expect(TraceContext.isValidTracestate(text) == valid, "\(text.prefix(40))")
        }
    }

    @Test func childContextsKeepTheTrace() throws {
        let parent = try #require(TraceContext(traceparent: Self.example))
        let child = parent.withSpanID(0x1234, flags: 0)
        #expect(child.traceIDHex == parent.traceIDHex)
        #expect(child.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000001234-00")
    }

    @Test func samplersDecideAsTheSDKsDo() throws {
        #expect(TraceSampler.alwaysOn.shouldSample(traceIDLow: 1, parentSampled: false))
        #expect(!TraceSampler.alwaysOff.shouldSample(traceIDLow: 1, parentSampled: true))
        let half = TraceSampler.traceIDRatio(0.5)
        #expect(half.shouldSample(traceIDLow: 0x7FFF_FFFF_FFFF_FFFF, parentSampled: nil))
        #expect(!half.shouldSample(traceIDLow: 0x8000_0000_0000_0000, parentSampled: nil))
        #expect(!TraceSampler.traceIDRatio(0).shouldSample(traceIDLow: 0, parentSampled: nil))
        #expect(TraceSampler.traceIDRatio(1).shouldSample(traceIDLow: .max, parentSampled: nil))
        let parentBased = TraceSampler.parentBased(root: .alwaysOff)
        #expect(parentBased.shouldSample(traceIDLow: 1, parentSampled: true))
        #expect(!parentBased.shouldSample(traceIDLow: 1, parentSampled: false))
        #expect(!parentBased.shouldSample(traceIDLow: 1, parentSampled: nil))
        // Every name of OTEL_TRACES_SAMPLER reads back as itself.
        for name in TraceSampler.names {
            #expect(try TraceSampler.parse(name: name, argument: "0.25").description == name)
        }
        #expect(try TraceSampler.parse(name: nil, argument: nil) == .parentBased(root: .alwaysOn))
        #expect(try TraceSampler.parse(name: "traceidratio", argument: "0.25") == .traceIDRatio(0.25))
        #expect(throws: ValidationError.self) { try TraceSampler.parse(name: "jaeger_remote", argument: nil) }
        #expect(throws: ValidationError.self) { try TraceSampler.parse(name: "traceidratio", argument: "2") }
    }

    @Test func theProtobufWriterUsesTheWireFormat() {
        var w = ProtobufWriter()
        w.varint(1, 300)
        w.string(2, "hi")
        w.fixed64(3, 1)
        w.fixed32(4, 1)
        w.varint(5, 0)                 // proto3: a default is not written
        #expect(w.bytes == [0x08, 0xAC, 0x02, 0x12, 0x02, 0x68, 0x69,
                            0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 1, 0, 0, 0])
        var outer = ProtobufWriter()
        outer.message(1) { $0.varint(1, 300) }
        #expect(outer.bytes == [0x0A, 3, 0x08, 0xAC, 0x02])
        var ids = ProtobufWriter()
        ids.bigEndian(1, 0x0102_0304_0506_0708)
        #expect(ids.bytes == [0x0A, 8, 1, 2, 3, 4, 5, 6, 7, 8])
    }

    /// A message written in place has the bytes of the same message written on its own and
    /// put behind its tag and length (a varint), whether the length takes one byte or several.
    @Test(arguments: [0, 1, 127, 128, 300, 20_000])
    func aMessageWrittenInPlaceMatchesOneWrittenApart(length: Int) {
        let text = String(repeating: "x", count: length)
        var apart = ProtobufWriter()
        apart.string(1, text)
        apart.varint(2, 7)
        var lengthVarint: [UInt8] = []
        var n = apart.bytes.count
        while n >= 0x80 {
            lengthVarint.append(UInt8(n & 0x7F) | 0x80)
            n >>= 7
        }
        lengthVarint.append(UInt8(n))
        let copied: [UInt8] = [0x08, 1, 0x1A] + lengthVarint + apart.bytes + [0x20, 9]
        var inPlace = ProtobufWriter()
        inPlace.varint(1, 1)
        inPlace.message(3) { body in
            body.string(1, text)
            body.varint(2, 7)
        }
        inPlace.varint(4, 9)
        #expect(inPlace.bytes == copied)
    }
}
