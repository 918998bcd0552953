/// Finds the raw text of a top-level member's value in a JSON object, so a value can
/// be kept exactly as written instead of being decoded and encoded again. The input
/// must already be known to be valid JSON (the caller parsed it first).
enum JSONMemberScanner {
    /// The byte range of `name`'s value in the top-level object `json`, or nil.
    static func valueRange(of name: String, in json: [UInt8]) -> Range<Int>? {
        var i = 0
        let n = json.count
        func skipSpace() { while i < n, json[i] == 0x20 || json[i] == 0x09 || json[i] == 0x0A || json[i] == 0x0D { i += 1 } }
        /// Skips a string starting at the opening quote; returns its raw content range.
        func skipString() -> Range<Int> {
            let start = i + 1
            i += 1
            while i < n {
                if json[i] == 0x5C { i += 2; continue }          // backslash: skip the escaped byte
                if json[i] == 0x22 { i += 1; return start..<(i - 1) }
                i += 1
            }
            return start..<n
        }
        func skipValue() {
            if i < n, json[i] == 0x22 { _ = skipString(); return }
            var depth = 0
            while i < n {
                let byte = json[i]
                if byte == 0x22 { _ = skipString(); continue }
                if byte == 0x7B || byte == 0x5B { depth += 1 }
                if byte == 0x7D || byte == 0x5D {
                    if depth == 0 { return }
                    depth -= 1
                    if depth == 0 { i += 1; return }
                }
                if byte == 0x2C && depth == 0 { return }
                i += 1
            }
        }
        let wanted = Array(name.utf8)
        skipSpace()
        guard i < n, json[i] == 0x7B else { return nil }
        i += 1
        while i < n {
            skipSpace()
            guard i < n, json[i] == 0x22 else { return nil }
            let key = skipString()
            skipSpace()
            guard i < n, json[i] == 0x3A else { return nil }
            i += 1
            skipSpace()
            let valueStart = i
            skipValue()
            var valueEnd = i
            while valueEnd > valueStart, [0x20, 0x09, 0x0A, 0x0D].contains(json[valueEnd - 1]) { valueEnd -= 1 }
            if json[key].elementsEqual(wanted) { return valueStart..<valueEnd }
            skipSpace()
            guard i < n, json[i] == 0x2C else { return nil }
            i += 1
        }
        return nil
    }
}
