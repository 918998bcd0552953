/// The SSRF guard's rule: which connected addresses Courier refuses by
/// default (`--allow-private-networks` lifts it).
///
/// Refused IPv4 ranges: 0.0.0.0/8 (unspecified, "this network"), 10.0.0.0/8,
/// 172.16.0.0/12 and 192.168.0.0/16 (private), 100.64.0.0/10 (carrier-grade
/// NAT), 127.0.0.0/8 (loopback), 169.254.0.0/16 (link-local, including the
/// cloud metadata address 169.254.169.254), 192.0.0.0/24 (IETF protocol
/// assignments), 198.18.0.0/15 (benchmarking), 224.0.0.0/4 (multicast),
/// 240.0.0.0/4 (reserved) and 255.255.255.255 (broadcast).
///
/// Refused IPv6: `::` (unspecified), `::1` (loopback), fc00::/7 (unique-local),
/// fe80::/10 (link-local), fec0::/10 (deprecated site-local), ff00::/8
/// (multicast), and other ::/96 (deprecated IPv4-compatible). Addresses that
/// embed an IPv4 address are judged by it: IPv4-mapped `::ffff:a.b.c.d`,
/// NAT64 `64:ff9b::/96` and 6to4 `2002::/16`.
///
/// Text that is not an IP address is refused (fail closed).
public enum AddressPolicy {
    private static let v4Ranges: [(network: UInt32, prefix: Int, label: String)] = [
        (0xFFFF_FFFF, 32, "the broadcast address"),
        (0x0000_0000, 8, "the unspecified network 0.0.0.0/8"),
        (0x0A00_0000, 8, "the private network 10.0.0.0/8"),
        (0x6440_0000, 10, "the carrier-grade NAT range 100.64.0.0/10"),
        (0x7F00_0000, 8, "loopback 127.0.0.0/8"),
        (0xA9FE_0000, 16, "link-local 169.254.0.0/16 (which includes the cloud metadata address)"),
        (0xAC10_0000, 12, "the private network 172.16.0.0/12"),
        (0xC000_0000, 24, "the IETF protocol range 192.0.0.0/24"),
        (0xC0A8_0000, 16, "the private network 192.168.0.0/16"),
        (0xC612_0000, 15, "the benchmarking range 198.18.0.0/15"),
        (0xE000_0000, 4, "multicast 224.0.0.0/4"),
        (0xF000_0000, 4, "the reserved range 240.0.0.0/4"),
    ]

    /// Why connecting to `ip` is refused, or nil if it is allowed.
    public static func forbiddenReason(ip: String) -> String? {
        guard let address = IPAddress(ip) else {
            return "\(Quoting.quote(ip)) is not an IP address"
        }
        return forbiddenReason(address)
    }

    /// Why connecting to `address` is refused, or nil if it is allowed.
    public static func forbiddenReason(_ address: IPAddress) -> String? {
        switch address {
        case .v4(let value):
            return v4Reason(value).map { "\(address) is in \($0)" }
        case .v6(let high, let low):
            let text = address.description
            if high == 0 && low == 0 { return "\(text) is the unspecified address" }
            if high == 0 && low == 1 { return "\(text) is loopback" }
            let embedded = UInt32(truncatingIfNeeded: low)
            if high == 0 && low >> 32 == 0xFFFF {
                return v4Reason(embedded).map { "\(text) maps to \(IPAddress.v4(embedded)), which is in \($0)" }
            }
            if high == 0 && low >> 32 == 0 {
                return "\(text) is a deprecated IPv4-compatible address"
            }
            if high == 0x0064_FF9B_0000_0000 && low >> 32 == 0 {
                return v4Reason(embedded).map { "\(text) is NAT64 for \(IPAddress.v4(embedded)), which is in \($0)" }
            }
            if high >> 48 == 0x2002 {
                let sixToFour = UInt32(truncatingIfNeeded: high >> 16)
                return v4Reason(sixToFour).map { "\(text) is 6to4 for \(IPAddress.v4(sixToFour)), which is in \($0)" }
            }
            if high >> 57 == 0xFC >> 1 { return "\(text) is in unique-local fc00::/7" }
            if high >> 54 == 0xFE80 >> 6 { return "\(text) is in link-local fe80::/10" }
            if high >> 54 == 0xFEC0 >> 6 { return "\(text) is in deprecated site-local fec0::/10" }
            if high >> 56 == 0xFF { return "\(text) is in multicast ff00::/8" }
            return nil
        }
    }

    /// Whether `ip` may be connected to under the default guard.
    public static func isAllowed(ip: String) -> Bool { forbiddenReason(ip: ip) == nil }

    /// The reason without the address in front ("in loopback 127.0.0.0/8"), for
    /// callers that name the address themselves, like the HTTP transport's guard.
    public static func refusalCategory(ip: String) -> String? {
        guard let reason = forbiddenReason(ip: ip) else { return nil }
        guard let address = IPAddress(ip) else { return reason }
        let prefix = "\(address) is "
        return reason.hasPrefix(prefix) ? String(reason.dropFirst(prefix.count)) : reason
    }

    private static func v4Reason(_ value: UInt32) -> String? {
        for range in v4Ranges {
            let mask: UInt32 = range.prefix == 0 ? 0 : ~UInt32(0) << UInt32(32 - range.prefix)
            if value & mask == range.network { return range.label }
        }
        return nil
    }
}
