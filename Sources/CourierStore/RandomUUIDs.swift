#if canImport(Glibc)
import Glibc
#endif

/// Random (version 4) UUIDs as lower-case text, for the idempotency keys of a bulk
/// load. Random bytes are read from the kernel 4 KiB at a time instead of once per
/// key (Foundation's `UUID()` made one system call per key, a sixth of the
/// client's time in a 100k-line load). The bytes are the kernel's CSPRNG output, as
/// `gen_random_uuid()` and `UUID()` use.
struct RandomUUIDs {
    private var pool = [UInt8](repeating: 0, count: 4096)
    private var used = 4096

    /// Calls `body` with the 36 bytes of a fresh UUID's text, such as
    /// `0b6f3c1e-7d2a-4f5b-9c8d-2e1f0a9b8c7d`.
    mutating func withNext<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if used + 16 > pool.count { refill() }
        let hex: StaticString = "0123456789abcdef"
        var text: (UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0)   // 36 bytes
        let start = used
        used += 16
        return withUnsafeMutableBytes(of: &text) { out in
            var position = 0
            for index in 0..<16 {
                var byte = pool[start + index]
                if index == 6 { byte = byte & 0x0F | 0x40 }   // version 4
                if index == 8 { byte = byte & 0x3F | 0x80 }   // RFC 4122 variant
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[position] = UInt8(ascii: "-")
                    position += 1
                }
                out[position] = hex.utf8Start[Int(byte >> 4)]
                out[position + 1] = hex.utf8Start[Int(byte & 0x0F)]
                position += 2
            }
            return body(UnsafeBufferPointer(out.bindMemory(to: UInt8.self)))
        }
    }

    /// A fresh UUID's text as a String.
    mutating func next() -> String { withNext { String(decoding: $0, as: UTF8.self) } }

    private mutating func refill() {
        pool.withUnsafeMutableBytes { buffer in
            // glibc's arc4random_buf reads the kernel's getrandom, one call per refill.
            arc4random_buf(buffer.baseAddress!, buffer.count)
        }
        used = 0
    }
}
