/// The SSRF guard's rule: which connected addresses Courier refuses by
/// default (`--allow-private-networks` lifts it).
///
/// Refused IPv4 ranges: 0.0.0.0/8 (unspecified, "this network"), 10.0.0.0/8,
/// 172.16.0.0/12 and 192.168.0.0/16 (private), 100.64.0.0/10 (carrier-grade
/// NAT), 127.0.0.0/8 (loopback), 169.254.0.0/16 (link-local, including the
/// cloud metadata address 169.254.169.254), 192.0.0.0/24 (IETF protocol
/// assignments), 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 (documentation,
/// TEST-NET-1 to 3), 198.18.0.0/15 (benchmarking), 224.0.0.0/4 (multicast),
/// 240.0.0.0/4 (reserved) and 255.255.255.255 (broadcast).
///
/// Refused IPv6: `::` (unspecified), `::1` (loopback), fc00::/7 (unique-local),
/// fe80::/10 (link-local), fec0::/10 (deprecated site-local), ff00::/8
/// (multicast), 64:ff9b:1::/48 (local-use NAT64, RFC 8215), 2001:db8::/32
/// (documentation), 2001::/32 (Teredo, which tunnels to an address it hides),
/// 100::/64 (discard-only), and other ::/96
/// (deprecated IPv4-compatible). Addresses that embed an IPv4 address are judged
/// by it: IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`
/// (::ffff:0:0/96), NAT64 `64:ff9b::/96` and 6to4 `2002::/16`.
///
/// And every address of the host itself (``refusalCategory(ip:ownAddresses:)``): a
/// service bound to 0.0.0.0 answers on the host's network addresses too, not only on
/// loopback. The addresses are read from the host's interfaces by the caller
/// (`HostAddresses` in CourierHTTP), so this rule stays pure.
///
/// This is the one policy: the worker's guard and the HTTP library's default guard
/// (what Swift users of `CurlTransport` get) both call it.
///
/// Text that is not an IP address is refused (fail closed).
public enum AddressPolicy {
    private static let v4Ranges: [(network: UInt32, prefix: Int, phrase: String)] = [
        (0xFFFF_FFFF, 32, "the broadcast address"),
        (0x0000_0000, 8, "in the unspecified network 0.0.0.0/8"),
        (0x0A00_0000, 8, "in the private network 10.0.0.0/8"),
        (0x6440_0000, 10, "in the carrier-grade NAT range 100.64.0.0/10"),
        (0x7F00_0000, 8, "in loopback 127.0.0.0/8"),
        (0xA9FE_0000, 16, "in link-local 169.254.0.0/16 (which includes the cloud metadata address)"),
        (0xAC10_0000, 12, "in the private network 172.16.0.0/12"),
        (0xC000_0000, 24, "in the IETF protocol range 192.0.0.0/24"),
        (0xC000_0200, 24, "in the documentation range 192.0.2.0/24 (TEST-NET-1)"),
        (0xC633_6400, 24, "in the documentation range 198.51.100.0/24 (TEST-NET-2)"),
        (0xCB00_7100, 24, "in the documentation range 203.0.113.0/24 (TEST-NET-3)"),
        (0xC0A8_0000, 16, "in the private network 192.168.0.0/16"),
        (0xC612_0000, 15, "in the benchmarking range 198.18.0.0/15"),
        (0xE000_0000, 4, "in multicast 224.0.0.0/4"),
        (0xF000_0000, 4, "in the reserved range 240.0.0.0/4"),
    ]

    /// Why connecting to `ip` is refused ("127.0.0.1 is in loopback 127.0.0.0/8"),
    /// or nil if it is allowed.
    public static func forbiddenReason(ip: String) -> String? {
        guard let address = IPAddress(ip) else {
            return "\(Quoting.quote(ip)) is not an IP address"
        }
        return forbiddenReason(address)
    }

    /// Why connecting to `address` is refused, or nil if it is allowed.
    public static func forbiddenReason(_ address: IPAddress) -> String? {
        refusalPhrase(address).map { "\(address) is \($0)" }
    }

    /// Whether `ip` may be connected to under the default guard.
    public static func isAllowed(ip: String) -> Bool { forbiddenReason(ip: ip) == nil }

    /// The reason without the address in front, written to follow "ADDRESS is"
    /// ("in loopback 127.0.0.0/8", "IPv4-mapped 127.0.0.1, which is in loopback
    /// 127.0.0.0/8"), for callers that name the address themselves, like the HTTP
    /// transport's guard. Nil when the address is allowed.
    public static func refusalCategory(ip: String) -> String? {
        guard let address = IPAddress(ip) else { return "not an IP address" }
        return refusalPhrase(address)
    }

    /// As ``refusalCategory(ip:)``, and also refused when `ip` is one of `ownAddresses` (the
    /// host's own interface addresses), written plainly or as an IPv4-mapped,
    /// -translated, NAT64 or 6to4 address.
    public static func refusalCategory(ip: String, ownAddresses: Set<IPAddress>) -> String? {
        guard let address = IPAddress(ip) else { return "not an IP address" }
        if let phrase = refusalPhrase(address) { return phrase }
        if ownAddresses.contains(address) { return "an address of this host" }
        if let embedded = embeddedV4(address), ownAddresses.contains(.v4(embedded)) {
            return "\(IPAddress.v4(embedded)) in IPv6 form, an address of this host"
        }
        return nil
    }

    /// The IPv4 address an IPv6 address stands for, when it embeds one.
    static func embeddedV4(_ address: IPAddress) -> UInt32? {
        guard case .v6(let high, let low) = address else { return nil }
        let embedded = UInt32(truncatingIfNeeded: low)
        if high == 0 && (low >> 32 == 0xFFFF || low >> 32 == 0xFFFF_0000) { return embedded }
        if high == 0x0064_FF9B_0000_0000 && low >> 32 == 0 { return embedded }
        if high >> 48 == 0x2002 { return UInt32(truncatingIfNeeded: high >> 16) }
        return nil
    }

    /// What follows "ADDRESS is" in a refusal; nil when allowed.
    static func refusalPhrase(_ address: IPAddress) -> String? {
        switch address {
        case .v4(let value):
            return v4Phrase(value)
        case .v6(let high, let low):
            if high == 0 && low == 0 { return "the unspecified address" }
            if high == 0 && low == 1 { return "loopback" }
            let embedded = UInt32(truncatingIfNeeded: low)
            func via(_ kind: String, _ v4: UInt32) -> String? {
                v4Phrase(v4).map { "\(kind) \(IPAddress.v4(v4)), which is \($0)" }
            }
            if high == 0 && low >> 32 == 0xFFFF { return via("IPv4-mapped", embedded) }
            if high == 0 && low >> 32 == 0xFFFF_0000 { return via("IPv4-translated", embedded) }   // ::ffff:0:0/96
            if high == 0 && low >> 32 == 0 { return "a deprecated IPv4-compatible address" }
            if high == 0x0064_FF9B_0000_0000 && low >> 32 == 0 { return via("NAT64 for", embedded) }
            if high >> 16 == 0x0064_FF9B_0001 { return "in local-use NAT64 64:ff9b:1::/48" }
            if high >> 48 == 0x2002 { return via("6to4 for", UInt32(truncatingIfNeeded: high >> 16)) }
            if high >> 57 == 0xFC >> 1 { return "in unique-local fc00::/7" }
            if high >> 54 == 0xFE80 >> 6 { return "in link-local fe80::/10" }
            if high >> 54 == 0xFEC0 >> 6 { return "in deprecated site-local fec0::/10" }
            if high >> 56 == 0xFF { return "in multicast ff00::/8" }
            if high >> 32 == 0x2001_0DB8 { return "in the documentation range 2001:db8::/32" }
            if high >> 32 == 0x2001_0000 { return "in Teredo 2001::/32 (a tunnel to an address it hides)" }
            if high == 0x0100_0000_0000_0000 { return "in the discard-only range 100::/64" }
            return nil
        }
    }

    private static func v4Phrase(_ value: UInt32) -> String? {
        for range in v4Ranges {
            let mask: UInt32 = range.prefix == 0 ? 0 : ~UInt32(0) << UInt32(32 - range.prefix)
            if value & mask == range.network { return range.phrase }
        }
        return nil
    }
}
