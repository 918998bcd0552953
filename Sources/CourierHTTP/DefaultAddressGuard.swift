import Glibc

/// The built-in SSRF address guard, used when the configuration supplies none.
///
/// Refuses loopback, private (RFC 1918 and the 100.64/10 shared space, which also
/// holds some cloud metadata services), link-local (169.254/16: the usual metadata
/// address), unspecified (0/8, `::`), IPv6 loopback, unique-local (fc00::/7),
/// link-local (fe80::/10) and deprecated site-local (fec0::/10) addresses. IPv4
/// addresses embedded in IPv6 (`::ffff:a.b.c.d`, `::a.b.c.d`, `64:ff9b::/96`) are
/// judged as the IPv4 address they carry. Anything that does not parse is refused.
enum DefaultAddressGuard {
    /// Returns a short category for a refused address, or `nil` if it is allowed.
    static func refusal(for ip: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            return classifyV4(withUnsafeBytes(of: &v4.s_addr) { Array($0) })
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, ip, &v6) == 1 {
            return classifyV6(withUnsafeBytes(of: &v6) { Array($0) })
        }
        return "not a valid IP address"
    }

    /// `b` holds the four address bytes in network order.
    static func classifyV4(_ b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): return "unspecified"
        case (127, _): return "loopback"
        case (10, _): return "private"
        case (172, 16...31): return "private"
        case (192, 168): return "private"
        case (100, 64...127): return "private"
        case (169, 254): return "link-local"
        default: return nil
        }
    }

    /// `b` holds the sixteen address bytes in network order.
    static func classifyV6(_ b: [UInt8]) -> String? {
        let firstTen = b[0..<10].allSatisfy { $0 == 0 }
        if firstTen && b[10] == 0xff && b[11] == 0xff {
            return classifyV4(Array(b[12..<16]))                       // ::ffff:a.b.c.d
        }
        if b[0..<12].allSatisfy({ $0 == 0 }) {
            if b[12..<15].allSatisfy({ $0 == 0 }) {
                if b[15] == 0 { return "unspecified" }               // ::
                if b[15] == 1 { return "loopback" }                  // ::1
            }
            return classifyV4(Array(b[12..<16]))                       // ::a.b.c.d (deprecated)
        }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return classifyV4(Array(b[12..<16]))                       // 64:ff9b::/96 (NAT64)
        }
        if b[0] & 0xfe == 0xfc { return "unique-local" }               // fc00::/7
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return "link-local" }  // fe80::/10
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return "site-local" }  // fec0::/10
        return nil
    }
}
