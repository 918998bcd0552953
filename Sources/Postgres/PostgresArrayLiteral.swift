/// Formats and parses one-dimensional PostgreSQL array literals (`{…}`) in text form.
public enum PostgresArrayLiteral {
    /// Formats elements as an array literal. Every non-NULL element is double-quoted
    /// with `\` and `"` backslash-escaped, so commas, braces, spaces and the word NULL
    /// stay data; `nil` becomes an unquoted `NULL`.
    /// Built as UTF-8 bytes (the acknowledgements format four arrays per batch): a `\` or `"`
    /// byte is always that ASCII character, never part of a multi-byte sequence.
    public static func format(_ elements: [String?]) -> String {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(2 + elements.count * 8)
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            guard let element else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(quote)
            for byte in element.utf8 {
                if byte == backslash || byte == quote { out.append(backslash) }
                out.append(byte)
            }
            out.append(quote)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses PostgreSQL's array output. An unquoted `NULL` (any case) is `nil`.
    /// A leading dimension decoration (`[0:2]=`) is skipped; nested (multi-dimensional)
    /// arrays are rejected.
    public static func parse(_ text: String) throws -> [String?] {
        let bytes = Array(text.utf8)
        var index = 0
        if bytes.first == UInt8(ascii: "[") {
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { throw invalid("bad dimension decoration") }
            index = equals + 1
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { throw invalid("expected '{'") }
        index += 1
        var elements: [String?] = []
        func skipSpaces() { while index < bytes.count, isSpace(bytes[index]) { index += 1 } }
        skipSpaces()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            guard index + 1 == bytes.count else { throw invalid("trailing characters") }
            return []
        }
        while true {
            skipSpaces()
            guard index < bytes.count else { throw invalid("unterminated array") }
            var element = [UInt8]()
            var quoted = false
            if bytes[index] == UInt8(ascii: "{") { throw invalid("multi-dimensional arrays are not supported") }
            if bytes[index] == UInt8(ascii: "\"") {
                quoted = true
                index += 1
                while true {
                    guard index < bytes.count else { throw invalid("unterminated quoted element") }
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") { index += 1; break }
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                        guard index < bytes.count else { throw invalid("dangling backslash") }
                    }
                    element.append(bytes[index])
                    index += 1
                }
                skipSpaces()
            } else {
                while index < bytes.count, bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}") {
                    if bytes[index] == UInt8(ascii: "\\") {
                        index += 1
                        guard index < bytes.count else { throw invalid("dangling backslash") }
                    }
                    element.append(bytes[index])
                    index += 1
                }
                while let last = element.last, isSpace(last) { element.removeLast() }
            }
            let value = String(decoding: element, as: UTF8.self)
            if !quoted, value.uppercased() == "NULL" {
                elements.append(nil)
            } else {
                elements.append(value)
            }
            guard index < bytes.count else { throw invalid("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw invalid("expected ',' or '}'") }
            guard index + 1 == bytes.count else { throw invalid("trailing characters") }
            return elements
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    private static func invalid(_ reason: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "cannot decode array literal: \(reason)")
    }
}
