/// JSON string literals written by hand, for the small objects Courier writes itself
/// (a job's headers, log lines) where `JSONSerialization` would box every value.
public enum JSONText {
    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped.
    public static func quoted(_ text: String) -> String {
        var json = ""
        appendQuoted(text, to: &json)
        return json
    }

    /// Appends `text` to `json` as a JSON string literal.
    public static func appendQuoted(_ text: String, to json: inout String) {
        json += "\""
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            json += text   // nothing to escape: the usual case
            return json += "\""
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": json += "\\\""
            case "\\": json += "\\\\"
            case "\n": json += "\\n"
            case "\r": json += "\\r"
            case "\t": json += "\\t"
            case "\u{0}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: json.unicodeScalars.append(scalar)
            }
        }
        json += "\""
    }
}
