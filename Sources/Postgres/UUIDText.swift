/// The canonical text of a UUID: 32 lower-case hex digits with dashes after the 4th, 6th,
/// 8th and 10th byte, as PostgreSQL writes `uuid`. One writer for the ids bound to
/// statements (`UUID.postgresText`) and the bulk loader's random keys.
public enum UUIDText {
    /// Bytes in the text form.
    public static let length = 36

    /// Writes the text of the 16 bytes in `bytes` to the start of `out` (at least
    /// ``length`` bytes) and returns ``length``.
    @inlinable @discardableResult
    public static func write(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(bytes.count == 16 && out.count >= length, "a UUID is 16 bytes, its text 36")
        var at = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 {
                out[at] = UInt8(ascii: "-")
                at += 1
            }
            out[at] = LowerHex.digit(bytes[index] >> 4)
            out[at + 1] = LowerHex.digit(bytes[index] & 0x0f)
            at += 2
        }
        return at
    }
}
