import Foundation

/// Keyset cursors as they appear in URLs (`?after=...`): opaque to the user, strict to read.
public enum Cursor {
    /// A jobs page cursor: the last id shown, a positive integer.
    public static func jobs(_ text: String?) -> Int64? {
        guard let text, !text.isEmpty, text.count <= 19, text.allSatisfy(\.isASCIIDigit), let id = Int64(text), id > 0 else { return nil }
        return id
    }

    /// A dead-letters page cursor: `MICROSECONDS-ID` (the last row's failed_at since 1970 and its id).
    public static func deadLetters(_ text: String?) -> (failedAtMicros: Int64, id: Int64)? {
        guard let text, text.count <= 40 else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.count <= 19 && $0.allSatisfy(\.isASCIIDigit) }),
              let micros = Int64(parts[0]), let id = Int64(parts[1]), id > 0 else { return nil }
        return (micros, id)
    }

    /// The text `deadLetters` reads back.
    public static func format(failedAtMicros: Int64, id: Int64) -> String {
        "\(failedAtMicros)-\(id)"
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
