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
    var asciiLowercased: String {
        String(decoding: utf8.map(\.asciiLowercased), as: UTF8.self)
    }

    /// The string with ASCII letters uppercased (non-ASCII untouched).
    var asciiUppercased: String {
        String(decoding: utf8.map { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) ? $0 - 32 : $0 }, as: UTF8.self)
    }
}

