/// Lower-case hexadecimal digits, as PostgreSQL writes `bytea` and `uuid` text.
@usableFromInline
enum LowerHex {
    /// The ASCII digit of `nibble` (0...15).
    @inlinable
    static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }
}
