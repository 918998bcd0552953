/// `application/x-www-form-urlencoded` text (query strings and form bodies) and the
/// `Cookie` header, decoded into name-value pairs in the order given.
public enum HTTPForm {
    /// `a=1&b=x+y&c=%3C` → `[("a", "1"), ("b", "x y"), ("c", "<")]`. A name without `=` has
    /// an empty value; pairs that do not decode as UTF-8 are kept with U+FFFD.
    public static func decode(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (percentDecode(parts[0]), parts.count > 1 ? percentDecode(parts[1]) : "")
        }
    }

    /// Percent-decoding with `+` as a space; a `%` not followed by two hex digits is kept as is.
    public static func percentDecode<S: StringProtocol>(_ text: S) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if byte == UInt8(ascii: "%"), index + 2 < utf8.count,
                      let high = hex(utf8[index + 1]), let low = hex(utf8[index + 2]) {
                bytes.append(high << 4 | low)
                index += 2
            } else {
                bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Percent-encodes everything but unreserved characters (for building query strings).
    public static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF")
                out += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
            }
        }
        return out
    }

    /// `a=1; b=2` → `[("a", "1"), ("b", "2")]`.
    public static func cookies(_ header: String) -> [(name: String, value: String)] {
        header.split(separator: ";").compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            return (parts[0].trimmingSpaces, parts[1].trimmingSpaces)
        }
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        var s = self[...]
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}

extension HTTPServer.Request {
    /// The query string's pairs.
    public var queryItems: [(name: String, value: String)] { query.map(HTTPForm.decode) ?? [] }

    /// The body's pairs when it is a form (`application/x-www-form-urlencoded`), else none.
    public var formItems: [(name: String, value: String)] {
        guard header("content-type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else { return [] }
        return HTTPForm.decode(String(decoding: body, as: UTF8.self))
    }

    /// The value of cookie `name`, if sent.
    public func cookie(_ name: String) -> String? {
        headers.filter { $0.name.lowercased() == "cookie" }.lazy.flatMap { HTTPForm.cookies($0.value) }
            .first { $0.name == name }?.value
    }
}
