/// Helpers that make untrusted text safe to put into messages and logs.
public enum Quoting {
    /// Escapes bytes so the result is printable ASCII on one line.
    ///
    /// Printable ASCII is kept; `\n`, `\r`, `\t`, `\\` and `"` are escaped;
    /// every other byte becomes `\xNN`. At most `limit` input bytes are used;
    /// a cut is marked with `…`.
    public static func escape<Bytes: Collection>(bytes: Bytes, limit: Int = 64) -> String where Bytes.Element == UInt8 {
        var out = ""
        var used = 0
        for byte in bytes {
            if used == limit {
                out += "…"
                break
            }
            used += 1
            switch byte {
            case UInt8(ascii: "\n"): out += "\\n"
            case UInt8(ascii: "\r"): out += "\\r"
            case UInt8(ascii: "\t"): out += "\\t"
            case UInt8(ascii: "\\"): out += "\\\\"
            case UInt8(ascii: "\""): out += "\\\""
            case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// Escapes a string's UTF-8 bytes (see ``escape(bytes:limit:)``).
    public static func escape(_ text: String, limit: Int = 64) -> String {
        escape(bytes: Array(text.utf8), limit: limit)
    }

    /// The escaped text in double quotes, for quoting input back in an error.
    public static func quote(_ text: String, limit: Int = 64) -> String {
        "\"" + escape(text, limit: limit) + "\""
    }

    /// The text with every control character — C0 (ESC, CR, LF, …), DEL and C1 — written
    /// as a visible escape (`\n`, `\r`, `\t`, `\e`, `\u{9B}`), and printable text,
    /// non-ASCII included, kept. For every human-readable line jobctl prints: stored URLs,
    /// destinations and messages come from enqueuers and destinations, and a raw ESC or CR
    /// could rewrite the operator's terminal or fake a line.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{1B}": out += "\\e"
            default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }

    /// ``printable(_:)`` line by line: the line breaks of multi-line output are kept.
    public static func printableLines(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { printable(String($0)) }.joined(separator: "\n")
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value < 0xA0)
    }
}
