/// Whether bytes are one JSON text (RFC 8259): any value at the top, blanks around it, an
/// optional UTF-8 byte order mark first. It only checks the grammar: no value is built, so a
/// large body costs one pass over its bytes (the worker asks this of every request body
/// without a Content-Type, and of every response body expected to be JSON). It is Courier's
/// one JSON scanner: the NDJSON reader of `jobctl enqueue --ndjson` checks each value with
/// ``valueEnd(in:from:to:enclosingDepth:checkingUTF8:)``.
public enum JSONSyntax {
    /// Containers nested deeper than this are refused, as parsers commonly do. Levels count
    /// from the outermost container, which is level 1.
    public static let maximumDepth = 512

    /// Why bytes are not JSON: where reading stopped and what it expected there.
    public struct Refusal: Error, Sendable, Equatable {
        /// Offset from the start of the buffer given.
        public var offset: Int
        /// What would have been valid there, in words ("a value", "',' or ']'", ...).
        public var expected: String

        public init(offset: Int, expected: String) {
            self.offset = offset
            self.expected = expected
        }
    }

    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        if let answer = bytes.withContiguousStorageIfAvailable(scan) { return answer }
        return Array(bytes).withUnsafeBufferPointer(scan)
    }

    public static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8(scan)
    }

    /// Checks the one JSON value that starts at `start` in `bytes[..<end]` (no blanks before
    /// it) and returns the offset just past it, or where and why it is not JSON.
    /// - Parameters:
    ///   - enclosingDepth: containers already open around the value; they count toward
    ///     ``maximumDepth``.
    ///   - checkingUTF8: false leaves bytes above 0x7F inside strings unchecked, for a caller
    ///     that validates the text once when it takes it out.
    public static func valueEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, enclosingDepth: Int = 0,
                                checkingUTF8: Bool = true) -> Result<Int, Refusal> {
        var scanner = Scanner(bytes: UnsafeBufferPointer(rebasing: bytes[start..<end]), enclosingDepth: enclosingDepth,
                              checksUTF8: checkingUTF8)
        guard scanner.walk() else { return .failure(Refusal(offset: start + scanner.at, expected: scanner.expected)) }
        return .success(start + scanner.at)
    }

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var scanner = Scanner(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { scanner.at = 3 }
        return scanner.document()
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        /// Containers open around the bytes, counted toward the depth bound.
        let enclosingDepth: Int
        let checksUTF8: Bool
        var at = 0
        /// Open containers, innermost last: true for an object.
        var open: [Bool] = []
        /// What was expected where scanning stopped (set on refusal).
        var expected = "a value"

        init(bytes: UnsafeBufferPointer<UInt8>, enclosingDepth: Int = 0, checksUTF8: Bool = true) {
            self.bytes = bytes
            self.enclosingDepth = enclosingDepth
            self.checksUTF8 = checksUTF8
        }

        /// Records what was expected here; always false, to return.
        mutating func refuse(_ what: String) -> Bool {
            expected = what
            return false
        }

        var current: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func skipBlanks() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { at += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            at += 1
            return true
        }

        /// One value, then only blanks.
        mutating func document() -> Bool {
            skipBlanks()
            guard walk() else { return false }
            skipBlanks()
            return at == bytes.count || refuse("the end after the value")
        }

        /// One whole value. Containers are walked with an explicit stack, so deep nesting
        /// costs no recursion.
        mutating func walk() -> Bool {
            guard value() else { return false }
            while !open.isEmpty {
                skipBlanks()
                let inObject = open[open.count - 1]
                if take(inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    open.removeLast()
                    continue
                }
                guard take(UInt8(ascii: ",")) else { return refuse(inObject ? "',' or '}'" : "',' or ']'") }
                skipBlanks()
                if inObject { guard member() else { return false } } else { guard value() else { return false } }
            }
            return true
        }

        /// `"name": ` then a value.
        mutating func member() -> Bool {
            guard current == UInt8(ascii: "\"") else { return refuse("a member name in double quotes") }
            guard string() else { return false }
            skipBlanks()
            guard take(UInt8(ascii: ":")) else { return refuse("':' after a member name") }
            skipBlanks()
            return value()
        }

        /// A scalar, or the opening of a container with its first element (the caller's
        /// loop reads the rest).
        mutating func value() -> Bool {
            switch current {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = current == UInt8(ascii: "{")
                at += 1
                guard enclosingDepth + open.count < JSONSyntax.maximumDepth else {
                    return refuse("at most \(JSONSyntax.maximumDepth) levels of nesting")
                }
                skipBlanks()
                if take(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) { return true }
                open.append(isObject)
                return isObject ? member() : value()
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard at + count <= bytes.count else { return refuse("a value") }
            for offset in 0..<count where bytes[at + offset] != word.utf8Start[offset] { return refuse("a value") }
            at += count
            return true
        }

        mutating func digits() -> Bool {
            let start = at
            while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { at += 1 }
            return at > start
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() -> Bool {
            let signed = take(UInt8(ascii: "-"))
            if take(UInt8(ascii: "0")) {
                // No leading zeros.
            } else {
                guard let first = current, first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9") else {
                    return refuse(signed ? "a digit" : "a value")
                }
                _ = digits()
            }
            if take(UInt8(ascii: ".")) { guard digits() else { return refuse("a digit after '.'") } }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard digits() else { return refuse("a digit in the exponent") }
            }
            return true
        }

        /// A string: no raw control characters, only JSON's escapes, well-formed UTF-8.
        mutating func string() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return refuse("a value") }
            while let byte = current {
                at += 1
                switch byte {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"): guard escape() else { return refuse("a valid escape after '\\'") }
                case 0x00..<0x20: return refuse("no raw control characters inside a string (write them as escapes)")
                case 0x80... where checksUTF8: guard multibyte(lead: byte) else { return refuse("valid UTF-8") }
                default: break
                }
            }
            return refuse("the closing '\"' of a string")
        }

        /// After a backslash: one of `"\/bfnrt`, or `u` and four hex digits.
        mutating func escape() -> Bool {
            guard let byte = current else { return false }
            at += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                return true
            case UInt8(ascii: "u"):
                guard let unit = hexUnit() else { return false }
                switch unit {
                // A surrogate only as the first half of a pair, the second half escaped
                // right after it (RFC 8259's ABNF allows lone ones; I-JSON, RFC 7493, and
                // most parsers refuse them).
                case 0xD800...0xDBFF:
                    guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hexUnit() else { return false }
                    return (0xDC00...0xDFFF).contains(low)
                case 0xDC00...0xDFFF: return false
                default: return true
                }
            default:
                return false
            }
        }

        /// Four hex digits, as a UTF-16 code unit.
        mutating func hexUnit() -> UInt16? {
            var unit: UInt16 = 0
            for _ in 0..<4 {
                guard let hex = current, let digit = hex.hexDigitValue else { return nil }
                unit = unit << 4 | UInt16(digit)
                at += 1
            }
            return unit
        }

        /// The rest of a UTF-8 sequence led by `lead` (already read): the shortest form, no
        /// surrogates, nothing above U+10FFFF.
        mutating func multibyte(lead: UInt8) -> Bool {
            let count: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF   // the bounds of the second byte
            switch lead {
            case 0xC2...0xDF: count = 1
            case 0xE0: count = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: count = 2
            case 0xED: count = 2; high = 0x9F
            case 0xF0: count = 3; low = 0x90
            case 0xF1...0xF3: count = 3
            case 0xF4: count = 3; high = 0x8F
            default: return false
            }
            for index in 0..<count {
                guard let byte = current else { return false }
                let (min, max) = index == 0 ? (low, high) : (0x80, 0xBF)
                guard byte >= min, byte <= max else { return false }
                at += 1
            }
            return true
        }
    }
}

extension UInt8 {
    fileprivate var hexDigitValue: UInt8? {
        switch self {
        case 0x30...0x39: self - 0x30
        case 0x41...0x46: self - 0x41 + 10
        case 0x61...0x66: self - 0x61 + 10
        default: nil
        }
    }
}
