/// HTML text in which every interpolated value is escaped, so a URL, header, body or
/// error message holding `<script>` shows as text. Only other `HTML` values (built
/// the same way) are inserted as markup.
///
///     let row: HTML = "<td>\(job.url)</td>"   // the URL is escaped
public struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var text: String

    public init(stringLiteral value: String) { text = value }

    public init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    /// Markup that is already safe (built from literals and escaped values).
    init(trusted text: String) { self.text = text }

    public var description: String { text }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        public init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity * 2) }
        public mutating func appendLiteral(_ literal: String) { text += literal }
        /// Escaped text.
        public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        public mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        public mutating func appendInterpolation<N: BinaryInteger>(_ value: N) { text += String(value) }
        /// Markup, inserted as is.
        public mutating func appendInterpolation(_ value: HTML) { text += value.text }
        public mutating func appendInterpolation(_ values: [HTML]) { text += values.map(\.text).joined() }
    }

    /// Escapes `& < > " '` so the text is safe in element content and in quoted attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    public static func + (a: HTML, b: HTML) -> HTML { HTML(trusted: a.text + b.text) }
}
