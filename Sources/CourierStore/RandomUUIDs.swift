#if canImport(Glibc)
import Glibc
#endif
import Postgres

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
        var raw: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &raw) { bytes in
            for index in 0..<16 { bytes[index] = pool[used + index] }
            bytes[6] = bytes[6] & 0x0F | 0x40   // version 4
            bytes[8] = bytes[8] & 0x3F | 0x80   // RFC 4122 variant
        }
        used += 16
        var text: (UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0)   // 36 bytes
        return withUnsafeMutableBytes(of: &text) { out in
            _ = withUnsafeBytes(of: raw) { UUIDText.write($0, into: out) }
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
