/// One finished span, as OpenTelemetry's data model has it (trace.proto's `Span`): what the
/// worker records of an attempt and what ``OTLPTraceEncoder`` writes. A plain value.
public struct SpanData: Sendable, Equatable {
    /// The span kinds of trace.proto.
    public enum Kind: Int, Sendable, Equatable {
        case `internal` = 1, server = 2, client = 3, producer = 4, consumer = 5
    }

    /// An attribute value (the scalar cases of trace.proto's `AnyValue`).
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
    }

    /// A key and its value.
    public struct Attribute: Sendable, Equatable {
        public var key: String
        public var value: Value

        public init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// Something that happened during the span, at a time.
    public struct Event: Sendable, Equatable {
        public var name: String
        public var timeUnixNano: UInt64
        public var attributes: [Attribute]

        public init(name: String, timeUnixNano: UInt64, attributes: [Attribute] = []) {
            self.name = name
            self.timeUnixNano = timeUnixNano
            self.attributes = attributes
        }
    }

    /// A causal link to another span (the enqueue's, the previous attempt's).
    public struct Link: Sendable, Equatable {
        public var context: TraceContext
        public var traceState: String?
        public var attributes: [Attribute]

        public init(context: TraceContext, traceState: String? = nil, attributes: [Attribute] = []) {
            self.context = context
            self.traceState = traceState
            self.attributes = attributes
        }
    }

    /// trace.proto's status codes.
    public enum StatusCode: Int, Sendable, Equatable {
        case unset = 0, ok = 1, error = 2
    }

    /// The span's trace, id and flags.
    public var context: TraceContext
    /// The parent span's id (same trace), nil for a root span.
    public var parentSpanID: UInt64?
    public var traceState: String?
    public var name: String
    public var kind: Kind
    public var startUnixNano: UInt64
    public var endUnixNano: UInt64
    public var attributes: [Attribute]
    public var events: [Event]
    public var links: [Link]
    public var statusCode: StatusCode
    public var statusMessage: String?

    public init(context: TraceContext, parentSpanID: UInt64? = nil, traceState: String? = nil, name: String, kind: Kind,
                startUnixNano: UInt64, endUnixNano: UInt64, attributes: [Attribute] = [], events: [Event] = [],
                links: [Link] = [], statusCode: StatusCode = .unset, statusMessage: String? = nil) {
        self.context = context
        self.parentSpanID = parentSpanID
        self.traceState = traceState
        self.name = name
        self.kind = kind
        self.startUnixNano = startUnixNano
        self.endUnixNano = endUnixNano
        self.attributes = attributes
        self.events = events
        self.links = links
        self.statusCode = statusCode
        self.statusMessage = statusMessage
    }

    /// The attribute `key`'s value, if set.
    public func attribute(_ key: String) -> Value? { attributes.first { $0.key == key }?.value }
}
