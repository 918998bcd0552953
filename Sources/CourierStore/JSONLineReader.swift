import CourierCore

/// A strict JSON reader (RFC 8259) for the one-object lines of an NDJSON bulk file.
///
/// It reads the members of an object and keeps nested objects and arrays as their
/// raw text (after checking them), so a JSON `body` is stored exactly as written and
/// nothing is decoded that is not needed. Each member's value is checked by
/// ``JSONSyntax`` (Courier's one JSON scanner, and its one depth bound); this type reads
/// only the outer object's punctuation and decodes strings. Foundation's `JSONSerialization` built a
/// dictionary of boxed values per line and was most of `jobctl enqueue --ndjson`'s
/// parse time (bench/notes.md, "Where the time goes").
struct JSONLineReader {
    /// A member's value. Objects, arrays and numbers keep their byte range in the line.
    enum Value {
        case string(String)
        case number(Range<Int>)
        case bool(Bool)
        case null
        case object(Range<Int>)
        case array(Range<Int>)
    }

    /// Why a line is not JSON, with the byte offset (from 0) where reading stopped.
    struct SyntaxError: Error {
        var offset: Int
        var expected: String
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index: Int
    private let end: Int
    /// Whether the input is all ASCII, so text needs no UTF-8 validation (most lines).
    private let isASCII: Bool

    /// A reader of `bytes[range]`; the buffer must outlive the reader.
    init(_ bytes: UnsafeBufferPointer<UInt8>, range: Range<Int>? = nil) {
        self.bytes = bytes
        self.index = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? bytes.count
        var highBits: UInt8 = 0
        for position in index..<end { highBits |= bytes[position] }
        self.isASCII = highBits < 0x80
    }

    /// The members of the object that makes up the whole input, in the order written.
    /// Returns nil when the input is valid JSON but not an object.
    mutating func readObjectMembers() throws(SyntaxError) -> [(key: String, value: Value)]? {
        skipSpace()
        guard index < end, bytes[index] == UInt8(ascii: "{") else {
            _ = try readValue(depth: 0)
            try expectEnd()
            return nil
        }
        index += 1
        var members: [(key: String, value: Value)] = []
        skipSpace()
        if index < end, bytes[index] == UInt8(ascii: "}") {
            index += 1
            try expectEnd()
            return members
        }
        while true {
            skipSpace()
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { throw fail("a member name in double quotes") }
            let key = try readString()
            skipSpace()
            try consume(UInt8(ascii: ":"), expected: "':' after a member name")
            members.append((key, try readValue(depth: 1)))
            skipSpace()
            if index < end, bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            try consume(UInt8(ascii: "}"), expected: "',' or '}' after a member")
            try expectEnd()
            return members
        }
    }

    /// The members of the object at `range` (a value this reader returned as `.object`).
    func members(of range: Range<Int>) throws(SyntaxError) -> [(key: String, value: Value)] {
        var inner = JSONLineReader(bytes, range: range)
        guard let members = try inner.readObjectMembers() else { throw SyntaxError(offset: range.lowerBound, expected: "an object") }
        return members
    }

    /// The raw text of `range`, which must be valid UTF-8 (strings inside nested values
    /// are checked here, once, rather than while skipping them).
    func text(_ range: Range<Int>) -> String? {
        let slice = UnsafeBufferPointer(rebasing: bytes[range])
        return isASCII ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
    }

    // MARK: - Values

    /// Reads the value at the current index, checked by ``JSONSyntax``; `depth`: the
    /// containers open around it.
    private mutating func readValue(depth: Int) throws(SyntaxError) -> Value {
        skipSpace()
        let start = index
        switch JSONSyntax.valueEnd(in: bytes, from: start, to: end, enclosingDepth: depth, checkingUTF8: false) {
        case .failure(let refusal): throw SyntaxError(offset: refusal.offset, expected: refusal.expected)
        case .success(let after): index = after
        }
        switch bytes[start] {
        case UInt8(ascii: "\""): return .string(try decodeString(start..<index))
        case UInt8(ascii: "{"): return .object(start..<index)
        case UInt8(ascii: "["): return .array(start..<index)
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "n"): return .null
        default: return .number(start..<index)
        }
    }

    // MARK: - Strings

    /// Reads a string starting at its opening quote and decodes its escapes.
    private mutating func readString() throws(SyntaxError) -> String {
        guard case .string(let text) = try readValue(depth: 0) else { throw fail("a string") }
        return text
    }

    /// Decodes the string at `range` (quotes included), which ``JSONSyntax`` has checked:
    /// its escapes are well formed; its UTF-8 is checked here.
    private func decodeString(_ range: Range<Int>) throws(SyntaxError) -> String {
        let start = range.lowerBound + 1
        let content = start..<(range.upperBound - 1)
        var hasEscapes = false
        for position in content where bytes[position] == UInt8(ascii: "\\") {
            hasEscapes = true
            break
        }
        if !hasEscapes {
            guard let text = text(content) else { throw SyntaxError(offset: start, expected: "valid UTF-8") }
            return text
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(content.count)
        var i = content.lowerBound
        while i < content.upperBound {
            let byte = bytes[i]
            guard byte == UInt8(ascii: "\\") else { decoded.append(byte); i += 1; continue }
            let escape = bytes[i + 1]
            i += 2
            switch escape {
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(hex4(at: i))
                i += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    // JSONSyntax checked that a low surrogate follows.
                    let low = UInt32(hex4(at: i + 2))
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                UTF8.encode(Unicode.Scalar(scalar)!) { decoded.append($0) }
            default: decoded.append(escape)   // " \ /
            }
        }
        guard let text = String(validating: decoded, as: UTF8.self) else { throw SyntaxError(offset: start, expected: "valid UTF-8") }
        return text
    }

    private func hex4Checked(at position: Int) -> UInt16? {
        guard position + 4 <= end else { return nil }
        var value: UInt16 = 0
        for offset in 0..<4 {
            guard let digit = hexValue(bytes[position + offset]) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private func hex4(at position: Int) -> UInt16 { hex4Checked(at: position) ?? 0 }

    private func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: - Small steps

    private mutating func skipSpace() {
        while index < end {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func consume(_ byte: UInt8, expected: String) throws(SyntaxError) {
        guard index < end, bytes[index] == byte else { throw fail(expected) }
        index += 1
    }

    private mutating func expectEnd() throws(SyntaxError) {
        skipSpace()
        guard index == end else { throw fail("the end of the line after the value") }
    }

    private func fail(_ expected: String) -> SyntaxError { SyntaxError(offset: index, expected: expected) }
}
