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
        String(self).mappingASCII(from: UInt8(ascii: "A"), through: UInt8(ascii: "Z"), by: 32)
    }

    /// The string with ASCII letters uppercased (non-ASCII untouched).
    public var asciiUppercased: String {
        String(self).mappingASCII(from: UInt8(ascii: "a"), through: UInt8(ascii: "z"), by: -32)
    }
}

extension String {
    /// The string with bytes in `from...through` shifted by `offset`; itself when there
    /// are none. Works on the UTF-8 buffer of a concrete String: the generic
    /// `StringProtocol` version was slow enough to show in bulk-load profiles.
    fileprivate func mappingASCII(from low: UInt8, through high: UInt8, by offset: Int8) -> String {
        var text = self
        return text.withUTF8 { bytes -> String in
            guard bytes.contains(where: { $0 >= low && $0 <= high }) else { return self }
            return String(unsafeUninitializedCapacity: bytes.count) { out in
                for index in 0..<bytes.count {
                    let byte = bytes[index]
                    out[index] = byte >= low && byte <= high ? UInt8(truncatingIfNeeded: Int(byte) + Int(offset)) : byte
                }
                return bytes.count
            }
        }
    }
}

