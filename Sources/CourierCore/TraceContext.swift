/// A W3C Trace Context (`traceparent`, https://www.w3.org/TR/trace-context/): the trace a
/// span belongs to, the span's id, and its flags. Pure; the one Swift reader and writer of
/// the header, with the same rules as `courier.is_traceparent` and `courier.is_tracestate`
/// (sql/0044): lower-case hex, version `ff` refused, version `00` exactly 55 characters (a
/// later version may add `-`fields), trace id and parent id not all zero.
public struct TraceContext: Sendable, Hashable, CustomStringConvertible {
    /// The trace id's high 64 bits (its first 16 hex digits).
    public var traceIDHigh: UInt64
    /// The trace id's low 64 bits (its last 16 hex digits), the part ratio samplers read.
    public var traceIDLow: UInt64
    /// The span id (the header's parent-id).
    public var spanID: UInt64
    /// The trace flags; bit 0 is `sampled`.
    public var flags: UInt8

    /// Whether the span was sampled (recorded) by whoever made it.
    public var isSampled: Bool { flags & 1 == 1 }

    /// A context from its parts. Callers make sure neither id is zero (``isValid``).
    public init(traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, flags: UInt8) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanID = spanID
        self.flags = flags
    }

    /// Whether both ids are non-zero, as the specification requires.
    public var isValid: Bool { (traceIDHigh != 0 || traceIDLow != 0) && spanID != 0 }

    /// The trace id as 32 lower-case hex digits.
    public var traceIDHex: String { Self.hex(traceIDHigh) + Self.hex(traceIDLow) }
    /// The span id as 16 lower-case hex digits.
    public var spanIDHex: String { Self.hex(spanID) }

    /// The header value, version 00: `00-<trace id>-<span id>-<flags>`.
    public var traceparent: String {
        "00-" + traceIDHex + "-" + spanIDHex + "-" + Self.hex(UInt64(flags), digits: 2)
    }

    public var description: String { traceparent }

    /// The same trace, as the span `spanID` (a child's context, or the next hop's parent).
    public func withSpanID(_ spanID: UInt64, flags: UInt8? = nil) -> TraceContext {
        TraceContext(traceIDHigh: traceIDHigh, traceIDLow: traceIDLow, spanID: spanID, flags: flags ?? self.flags)
    }

    /// What a traceparent may be, for messages (the words of `courier.traceparent_rule()`).
    public static let traceparentRule =
        "must be a W3C traceparent such as 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>: lower-case hex, ids not all zero, version not ff"
    /// What a tracestate may be, for messages (the words of `courier.tracestate_rule()`).
    public static let tracestateRule =
        "must be a W3C tracestate: at most 32 comma-separated key=value members and 512 characters"

    /// Reads a `traceparent` value; nil when it breaks a rule.
    public init?(traceparent text: some StringProtocol) {
        let bytes = Array(text.utf8)
        // version(2) - trace id(32) - parent id(16) - flags(2) = 55; a later version may go on after a '-'.
        guard bytes.count >= 55, bytes.count <= 256, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D,
              let version = Self.parseHex(bytes[0..<2]), version != 0xFF,
              let high = Self.parseHex(bytes[3..<19]), let low = Self.parseHex(bytes[19..<35]),
              let span = Self.parseHex(bytes[36..<52]), let flags = Self.parseHex(bytes[53..<55]) else { return nil }
        if version == 0 {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55 {
            guard bytes[55] == 0x2D, bytes[56...].allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        }
        self.init(traceIDHigh: high, traceIDLow: low, spanID: span, flags: UInt8(flags))
        guard isValid else { return nil }
    }

    /// Reads a `traceparent`, or throws naming `field`.
    public static func parse(traceparent text: String, field: String = "traceparent") throws(ValidationError) -> TraceContext {
        guard let context = TraceContext(traceparent: text) else {
            throw ValidationError(field: field, message: traceparentRule)
        }
        return context
    }

    /// Whether `text` is a valid `tracestate`: at most 512 characters and 32 list members,
    /// each `key=value` (empty members allowed), separated by commas with optional spaces or
    /// tabs around them. Keys are `[a-z][a-z0-9_*/-]{0,255}` or `tenant@system`; values are
    /// up to 256 printable ASCII characters other than `,` and `=`, not ending in a space.
    public static func isValidTracestate(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count <= 512 else { return false }
        var members = 0
        for raw in utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let member = trimmed(raw)
            if member.isEmpty { continue }
            members += 1
            guard members <= 32, isListMember(member) else { return false }
        }
        return true
    }

    /// Checks a `tracestate`, or throws naming `field`.
    public static func validate(tracestate text: String, field: String = "tracestate") throws(ValidationError) {
        if !isValidTracestate(text) { throw ValidationError(field: field, message: tracestateRule) }
    }

    // MARK: - Grammar

    private static func trimmed(_ bytes: Substring.UTF8View.SubSequence) -> ArraySlice<UInt8> {
        var slice = ArraySlice(bytes)
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    private static func isListMember(_ member: ArraySlice<UInt8>) -> Bool {
        guard let equals = member.firstIndex(of: UInt8(ascii: "=")) else { return false }
        let key = member[member.startIndex..<equals]
        let value = member[(equals + 1)...]
        return isKey(key) && isValue(value)
    }

    private static func isLower(_ b: UInt8) -> Bool { b >= 0x61 && b <= 0x7A }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    private static func isKeyTail(_ b: UInt8) -> Bool {
        isLower(b) || isDigit(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "*") || b == UInt8(ascii: "/")
    }

    private static func isKey(_ key: ArraySlice<UInt8>) -> Bool {
        if let at = key.firstIndex(of: UInt8(ascii: "@")) {
            let tenant = key[key.startIndex..<at], system = key[(at + 1)...]
            guard let t = tenant.first, isLower(t) || isDigit(t), tenant.count <= 241, tenant.dropFirst().allSatisfy(isKeyTail),
                  let s = system.first, isLower(s), system.count <= 14, system.dropFirst().allSatisfy(isKeyTail) else { return false }
            return true
        }
        guard let first = key.first, isLower(first), key.count <= 256 else { return false }
        return key.dropFirst().allSatisfy(isKeyTail)
    }

    private static func isValueByte(_ b: UInt8) -> Bool {
        b >= 0x20 && b <= 0x7E && b != UInt8(ascii: ",") && b != UInt8(ascii: "=")
    }

    private static func isValue(_ value: ArraySlice<UInt8>) -> Bool {
        guard let last = value.last, value.count <= 256, last != 0x20 else { return false }
        return value.allSatisfy(isValueByte)
    }

    private static func parseHex(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for b in bytes {
            let digit: UInt8
            switch b {
            case 0x30...0x39: digit = b - 0x30
            case 0x61...0x66: digit = b - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    static func hex(_ value: UInt64, digits: Int = 16) -> String {
        let table: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8](repeating: 0x30, count: digits)
        var v = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            out[index] = table[Int(v & 0xF)]
            v >>= 4
        }
        return String(decoding: out, as: UTF8.self)
    }
}
