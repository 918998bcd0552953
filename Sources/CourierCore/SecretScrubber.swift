/// Removes the secrets of one request from what a receiver sent back (a response body, a
/// header value, a message built from them) before any of it is cut, escaped, logged or
/// stored, whether the receiver echoed them as they are or transformed. Built once from
/// the request's secret values and used for every piece of the response; pure.
///
/// A run of input bytes is replaced by ``Redaction/placeholder`` when, read in one of the
/// *views* and with letters folded to lower case (ASCII and Latin-1: `BEARER SK…`, `Ü`),
/// it equals a *window* of one of the secret's *forms*:
/// - **windows**: every ``window``-byte substring of a secret, and of each part of it 8
///   bytes or longer ("Bearer xyz", "a=b; c=d" split at space, `;`, `=` and `,`, since a
///   receiver may echo one part alone). A secret or part shorter than ``window`` bytes is
///   one window of its own length; secrets shorter than 4 bytes are left alone (they
///   would match everywhere). Overlapping matches join, so a whole echo is one placeholder.
/// - **forms**: the secret's UTF-8 bytes; and those bytes read as Latin-1, or as
///   Windows-1252 (what most decoders called Latin-1 use), and encoded again in UTF-8,
///   once or twice (a receiver that got the encoding wrong).
/// - **views**: the input as it is, and the input with one level of escapes decoded:
///   JSON (`\"`, `\\`, `\/`, `\n`..., `\u00FC`, surrogate pairs), HTML (`&amp;`, `&lt;`,
///   `&gt;`, `&quot;`, `&apos;`, `&#252;`, `&#xFC;`) and percent (`%C3%BC`). An escape
///   is removed whole. `+` is not read as a space (base64 secrets hold `+`; a space splits
///   a secret into parts that are matched on their own).
///
/// So an echo that is upper-cased, escaped, percent-encoded or re-encoded loses every
/// stretch of ``window`` or more bytes of the secret. What can survive: fewer than
/// ``window`` bytes on each side of a change the receiver made inside the secret that no
/// view undoes (a character dropped or inserted, a letter of another script case-folded,
/// `ß` written `SS`), and a transformation not listed (base64, hashing, two levels of escapes).
///
/// Why windows and a set: matching each secret's every transformation as a whole would
/// need one pass per combination and still miss a partial echo; a set of fixed-length
/// windows is matched in one pass over each view, whatever the number of secrets.
/// Cost: building holds one set entry per window of each form, about five per secret
/// byte. Scanning is one hash lookup of a 12-byte key per input byte, for each view (the
/// second only when the input holds `\`, `&` or `%`) and each distinct window length (one,
/// plus one per secret or part shorter than ``window``): linear in the input, which is the
/// response excerpt (at most `--max-response-body` bytes).
public struct SecretScrubber: Sendable {
    /// The shortest run of a secret's bytes that is removed wherever it appears transformed.
    public static let window = 12
    /// Secrets shorter than this are not scrubbed at all.
    public static let shortestSecret = 4
    /// Parts of a secret shorter than this are not matched on their own.
    public static let shortestPart = 8

    /// A window of up to 12 bytes, packed (its length is its group's).
    struct Key: Hashable {
        var low: UInt64
        var high: UInt32
    }

    /// The windows to look for, by length.
    private let windows: [Int: Set<Key>]

    /// Indexes the windows of every secret (and of its parts) in every form.
    public init(secrets: [String]) {
        var windows: [Int: Set<Key>] = [:]
        for secret in secrets {
            let utf8 = Array(secret.utf8)
            guard utf8.count >= Self.shortestSecret else { continue }
            var sources = [utf8]
            for part in utf8.split(whereSeparator: { $0 == 0x20 || $0 == 0x3B || $0 == 0x3D || $0 == 0x2C })
            where part.count >= Self.shortestPart && part.count < utf8.count {
                sources.append(Array(part))
            }
            for source in sources {
                for form in Self.forms(of: source) {
                    let length = min(Self.window, form.count)
                    for start in 0...(form.count - length) {
                        windows[length, default: []].insert(Self.key(form, from: start, length: length))
                    }
                }
            }
        }
        self.windows = windows
    }

    /// Whether there is anything to remove.
    public var isEmpty: Bool { windows.isEmpty }

    /// `bytes` with every run that matches a window replaced by ``Redaction/placeholder``.
    public func scrub(_ bytes: [UInt8]) -> [UInt8] {
        guard !windows.isEmpty, !bytes.isEmpty else { return bytes }
        // +1 where a covered run starts, -1 where it ends: marking a match costs O(1).
        var cover = [Int32](repeating: 0, count: bytes.count + 1)
        var found = mark(View(raw: bytes), &cover)
        if bytes.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "%") }) {
            found = mark(View(decoding: bytes), &cover) || found
        }
        guard found else { return bytes }
        return Self.replace(bytes, cover: cover)
    }

    /// The text with the same replacements as ``scrub(_:)-([UInt8])``.
    public func scrub(_ text: String) -> String {
        guard !windows.isEmpty else { return text }
        return String(decoding: scrub(Array(text.utf8)), as: UTF8.self)
    }

    /// Marks the input ranges behind every window of `view` that is a secret's; whether any was.
    private func mark(_ view: View, _ cover: inout [Int32]) -> Bool {
        var found = false
        for (length, set) in windows where view.bytes.count >= length {
            for start in 0...(view.bytes.count - length) where set.contains(Self.key(view.bytes, from: start, length: length)) {
                cover[Int(view.from[start])] += 1
                cover[Int(view.to[start + length - 1])] -= 1
                found = true
            }
        }
        return found
    }

    /// The input with each covered run, widened to whole UTF-8 sequences, replaced by one placeholder.
    static func replace(_ bytes: [UInt8], cover: [Int32]) -> [UInt8] {
        var covered = [Bool](repeating: false, count: bytes.count)
        var depth: Int32 = 0
        for index in bytes.indices {
            depth += cover[index]
            covered[index] = depth > 0
        }
        // A run that starts or ends inside a multi-byte character takes the whole character.
        for index in bytes.indices where covered[index] {
            var back = index
            while back > 0, bytes[back].isContinuation, !covered[back - 1] {
                back -= 1
                covered[back] = true
            }
            var ahead = index + 1
            while ahead < bytes.count, bytes[ahead].isContinuation, !covered[ahead] {
                covered[ahead] = true
                ahead += 1
            }
        }
        let marker = Array(Redaction.placeholder.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if covered[index] {
                out += marker
                while index < bytes.count, covered[index] { index += 1 }
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    /// `length` (at most 12) bytes of `bytes` from `start`, case folded, packed.
    static func key(_ bytes: [UInt8], from start: Int, length: Int) -> Key {
        var low: UInt64 = 0, high: UInt32 = 0
        for offset in 0..<length {
            let byte = UInt64(folded(bytes, at: start + offset))
            if offset < 8 { low |= byte << (8 * offset) } else { high |= UInt32(byte) << (8 * (offset - 8)) }
        }
        return Key(low: low, high: high)
    }

    /// The byte at `index` with letters in lower case: ASCII `A`...`Z`, and the Latin-1
    /// capitals `À`...`Þ` but `×` (UTF-8 C3 80...C3 9E: the second byte, after C3, gets
    /// 0x20 added). Other scripts are not folded.
    static func folded(_ bytes: [UInt8], at index: Int) -> UInt8 {
        let byte = bytes[index]
        switch byte {
        case 0x41...0x5A:
            return byte | 0x20
        case 0x80...0x9E where byte != 0x97 && index > 0 && bytes[index - 1] == 0xC3:
            return byte | 0x20
        default:
            return byte
        }
    }

    // MARK: Forms

    /// The secret's bytes, and the same bytes shown as Latin-1 or Windows-1252 and encoded
    /// again in UTF-8, once and twice; without repeats.
    static func forms(of bytes: [UInt8]) -> [[UInt8]] {
        guard bytes.contains(where: { $0 >= 0x80 }) else { return [bytes] }
        var forms = [bytes]
        for reencode in [latin1Reencoded, windows1252Reencoded] {
            let once = reencode(bytes)
            forms.append(once)
            forms.append(reencode(once))
        }
        var seen = Set<[UInt8]>()
        return forms.filter { seen.insert($0).inserted }
    }

    /// Each byte taken as the Latin-1 character of that number, written in UTF-8.
    static func latin1Reencoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { appendUTF8(UInt32(byte), to: &out) }
        return out
    }

    /// Each byte taken as its Windows-1252 character, written in UTF-8 (the five bytes
    /// Windows-1252 leaves undefined as their Latin-1 characters, as WHATWG decoders do).
    static func windows1252Reencoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3)
        for byte in bytes {
            let scalar = (0x80...0x9F).contains(byte) ? windows1252High[Int(byte) - 0x80] : UInt32(byte)
            appendUTF8(scalar, to: &out)
        }
        return out
    }

    /// Windows-1252's characters for 0x80...0x9F.
    static let windows1252High: [UInt32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]

    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: Views

    /// The input read one way: bytes, and for each the input range `from[i]..<to[i]` it came from.
    struct View {
        var bytes: [UInt8] = []
        var from: [Int32] = []
        var to: [Int32] = []

        /// The input as it is.
        init(raw input: [UInt8]) {
            bytes = input
            from = (0..<Int32(input.count)).map { $0 }
            to = from.map { $0 + 1 }
        }

        /// The input with one level of JSON, HTML and percent escapes decoded.
        init(decoding input: [UInt8]) {
            bytes.reserveCapacity(input.count)
            from.reserveCapacity(input.count)
            to.reserveCapacity(input.count)
            var index = 0
            while index < input.count {
                if let (decoded, length) = SecretScrubber.escape(in: input, at: index) {
                    for byte in decoded { append(byte, index, index + length) }
                    index += length
                } else {
                    append(input[index], index, index + 1)
                    index += 1
                }
            }
        }

        private mutating func append(_ byte: UInt8, _ start: Int, _ end: Int) {
            bytes.append(byte)
            from.append(Int32(start))
            to.append(Int32(end))
        }
    }

    /// The bytes an escape at `index` stands for and its length, or nil when there is none.
    static func escape(in input: [UInt8], at index: Int) -> (bytes: [UInt8], length: Int)? {
        switch input[index] {
        case UInt8(ascii: "%"):
            guard index + 2 < input.count, let high = input[index + 1].hexDigit, let low = input[index + 2].hexDigit else { return nil }
            return ([high << 4 | low], 3)
        case UInt8(ascii: "\\"):
            return jsonEscape(in: input, at: index)
        case UInt8(ascii: "&"):
            return htmlEscape(in: input, at: index)
        default:
            return nil
        }
    }

    private static func jsonEscape(in input: [UInt8], at index: Int) -> (bytes: [UInt8], length: Int)? {
        guard index + 1 < input.count else { return nil }
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F,
            UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        if let byte = simple[input[index + 1]] { return ([byte], 2) }
        guard let unit = hexUnit(input, index) else { return nil }
        var scalar = unit
        var length = 6
        if (0xD800..<0xDC00).contains(unit) {
            guard let low = hexUnit(input, index + 6), (0xDC00..<0xE000).contains(low) else { return nil }
            scalar = 0x10000 + (unit - 0xD800) << 10 + (low - 0xDC00)
            length = 12
        } else if (0xDC00..<0xE000).contains(unit) {
            return nil
        }
        var out: [UInt8] = []
        appendUTF8(scalar, to: &out)
        return (out, length)
    }

    /// The code unit of `\uXXXX` at `index`.
    private static func hexUnit(_ input: [UInt8], _ index: Int) -> UInt32? {
        guard index + 5 < input.count, input[index] == UInt8(ascii: "\\"), input[index + 1] == UInt8(ascii: "u") else { return nil }
        var unit: UInt32 = 0
        for offset in 2...5 {
            guard let digit = input[index + offset].hexDigit else { return nil }
            unit = unit << 4 | UInt32(digit)
        }
        return unit
    }

    private static let htmlNames: [[UInt8]: UInt8] = [
        Array("amp".utf8): 0x26, Array("lt".utf8): 0x3C, Array("gt".utf8): 0x3E, Array("quot".utf8): 0x22, Array("apos".utf8): 0x27,
    ]

    private static func htmlEscape(in input: [UInt8], at index: Int) -> (bytes: [UInt8], length: Int)? {
        // The longest escape read: "&#x10FFFF;" or "&#1114111;", 10 bytes.
        let end = min(input.count, index + 11)
        guard let semicolon = input[(index + 1)..<end].firstIndex(of: UInt8(ascii: ";")) else { return nil }
        let body = Array(input[(index + 1)..<semicolon])
        let length = semicolon + 1 - index
        if let byte = htmlNames[body] { return ([byte], length) }
        guard body.count >= 2, body[0] == UInt8(ascii: "#") else { return nil }
        let hex = body[1] == UInt8(ascii: "x") || body[1] == UInt8(ascii: "X")
        let digits = body.dropFirst(hex ? 2 : 1)
        guard !digits.isEmpty, digits.count <= 7 else { return nil }
        var scalar: UInt32 = 0
        for digit in digits {
            guard let value = hex ? digit.hexDigit : digit.decimalDigit else { return nil }
            scalar = scalar * (hex ? 16 : 10) + UInt32(value)
        }
        guard scalar <= 0x10FFFF, !(0xD800..<0xE000).contains(scalar) else { return nil }
        var out: [UInt8] = []
        appendUTF8(scalar, to: &out)
        return (out, length)
    }
}

extension UInt8 {
    /// A UTF-8 continuation byte (`10xxxxxx`).
    var isContinuation: Bool { self & 0xC0 == 0x80 }
}
