/// ASCII helpers: HTTP names, methods and schemes are ASCII and compared
/// case-insensitively, independent of locale.
extension StringProtocol {
    /// ASCII case-insensitive comparison (header names, methods, schemes).
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { $0.asciiLowercased == $1.asciiLowercased }
    }

    /// The string with ASCII letters lowercased (non-ASCII untouched).
    public var asciiLowercased: String {
        // Most text is lower case already: copy it as is.
        if !utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) { return String(self) }
        return String(decoding: utf8.map(\.asciiLowercased), as: UTF8.self)
    }

    /// The string with ASCII letters uppercased (non-ASCII untouched).
    public var asciiUppercased: String {
        if !utf8.contains(where: { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }) { return String(self) }
        return String(decoding: utf8.map { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) ? $0 - 32 : $0 }, as: UTF8.self)
    }
}

