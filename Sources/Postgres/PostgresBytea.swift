import Foundation

/// `bytea` text helpers: the hex format (`\x` followed by two lowercase hex digits per
/// byte) is written; hex and the escape format (`bytea_output = escape`, which a
/// connection pooler may leave in place of the session's `hex`) are read.
enum PostgresBytea {
    static func hexText(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(2 + bytes.count * 2)
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        for byte in bytes {
            out.append(LowerHex.digit(byte >> 4))
            out.append(LowerHex.digit(byte & 0x0f))
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func parseHex(_ text: String) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        if !(utf8.count >= 2 && utf8[0] == UInt8(ascii: "\\") && utf8[1] == UInt8(ascii: "x")) {
            return try parseEscape(utf8)
        }
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            throw PostgresError.decoding(Data.self, "expected bytea hex format (\\x...)")
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else {
                throw PostgresError.decoding(Data.self, "invalid hex digit")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The escape format: `\\` is a backslash, `\ooo` (three octal digits) a byte, any
    /// other byte stands for itself.
    static func parseEscape(_ utf8: [UInt8]) throws -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count)
        var index = 0
        func octal(_ c: UInt8) -> UInt8? { (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(c) ? c - UInt8(ascii: "0") : nil }
        while index < utf8.count {
            let c = utf8[index]
            guard c == UInt8(ascii: "\\") else { bytes.append(c); index += 1; continue }
            if index + 1 < utf8.count, utf8[index + 1] == UInt8(ascii: "\\") {
                bytes.append(c); index += 2; continue
            }
            guard index + 3 < utf8.count, let a = octal(utf8[index + 1]), let b = octal(utf8[index + 2]), let d = octal(utf8[index + 3]), a <= 3 else {
                throw PostgresError.decoding(Data.self, "expected bytea in hex (\\x...) or escape format")
            }
            bytes.append(a << 6 | b << 3 | d)
            index += 4
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
