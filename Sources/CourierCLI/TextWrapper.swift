import Foundation

/// Greedy word wrapping for help text.
enum TextWrapper {
    /// Joins words that must stay on one line; shown as a plain space.
    static let noBreakSpace = "\u{00A0}"

    /// Splits `text` into lines of at most `width` characters, breaking at
    /// spaces (never at ``noBreakSpace``, which becomes a plain space); runs of
    /// whitespace collapse to one space, and a word longer than `width` stays
    /// whole on its own line.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }) {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.map { $0.replacingOccurrences(of: noBreakSpace, with: " ") }
    }

    /// Wraps each paragraph (separated by blank lines) of `text`, keeping a
    /// blank line between them. A paragraph with a line that starts with a
    /// space is preformatted and kept as written.
    static func paragraphs(_ text: String, width: Int) -> [String] {
        var result: [String] = []
        for paragraph in text.components(separatedBy: "\n\n") {
            let lines = paragraph.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let body = lines.contains(where: { $0.hasPrefix(" ") }) ? lines : wrap(paragraph, width: width)
            if body.isEmpty { continue }
            if !result.isEmpty { result.append("") }
            result.append(contentsOf: body)
        }
        return result
    }
}
