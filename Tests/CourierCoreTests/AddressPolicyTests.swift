import CourierCore
import Testing

@Suite struct AddressPolicyTests {
    @Test(arguments: [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "10.0.0.0/8"),
        ("172.16.0.1", "172.16.0.0/12"),
        ("172.31.255.255", "172.16.0.0/12"),
        ("192.168.1.1", "192.168.0.0/16"),
        ("169.254.169.254", "metadata"),
        ("169.254.0.1", "link-local"),
        ("0.0.0.0", "0.0.0.0/8"),
        ("0.1.2.3", "0.0.0.0/8"),
        ("100.64.0.1", "100.64.0.0/10"),
        ("100.127.255.255", "100.64.0.0/10"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("192.0.0.8", "192.0.0.0/24"),
        ("198.18.0.1", "198.18.0.0/15"),
        ("::1", "loopback"),
        ("[::1]", "loopback"),
        ("0:0:0:0:0:0:0:1", "loopback"),
        ("::", "unspecified"),
        ("fc00::1", "unique-local"),
        ("fd12:3456:789a::1", "unique-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("febf::1", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, which is in loopback"),
        ("::ffff:0:7f00:1", "IPv4-translated 127.0.0.1"),
        ("::ffff:0:10.0.0.1", "10.0.0.0/8"),
        ("64:ff9b:1::808:808", "local-use NAT64"),
        ("64:ff9b:1:ffff::1", "local-use NAT64"),
        ("2002:a9fe:a9fe::1", "6to4 for 169.254.169.254"),
        ("::ffff:7f00:1", "loopback"),
        ("::FFFF:169.254.169.254", "metadata"),
        ("::ffff:10.0.0.1", "10.0.0.0/8"),
        ("64:ff9b::10.0.0.1", "NAT64"),
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:7f00:1::", "6to4 for 127.0.0.1"),
        ("::10.0.0.1", "IPv4-compatible"),
        ("localhost", "not an IP address"),
        ("", "not an IP address"),
        ("1.2.3", "not an IP address"),
        ("1.2.3.256", "not an IP address"),
        ("01.2.3.4", "not an IP address"),
        ("1::2::3", "not an IP address"),
        ("12345::1", "not an IP address"),
        ("1:2:3:4:5:6:7:8:9", "not an IP address"),
        ("::ffff:1.2.3", "not an IP address"),
        // Issue 43 item 8: documentation ranges, Teredo and discard-only.
        ("192.0.2.1", "TEST-NET-1"),
        ("198.51.100.7", "TEST-NET-2"),
        ("203.0.113.255", "TEST-NET-3"),
        ("::ffff:203.0.113.9", "TEST-NET-3"),
        ("2001:db8::1", "2001:db8::/32"),
        ("2001:db8:ffff:ffff::1", "2001:db8::/32"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("100::1", "discard-only"),
        ("100::ffff:ffff:ffff:ffff", "discard-only"),
    ])
    func refuses(ip: String, fragment: String) throws {
        let reason = try #require(AddressPolicy.forbiddenReason(ip: ip))
        #expect(reason.contains(fragment), "\(ip): \(reason)")
        #expect(!AddressPolicy.isAllowed(ip: ip))
    }

    @Test(arguments: [
        "93.184.216.34", "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1",
        "169.253.255.255", "192.167.1.1", "223.255.255.255", "11.0.0.1", "198.20.0.1",
        "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
        "fbff::1", "fe7f::1", "64:ff9b:2::1", "::ffff:0:808:808",
        "192.0.3.1", "198.51.101.1", "203.0.114.1", "2001:db9::1", "2001:1::1", "100:0:0:1::1",
    ])
    func allows(ip: String) {
        #expect(AddressPolicy.forbiddenReason(ip: ip) == nil)
        #expect(AddressPolicy.isAllowed(ip: ip))
    }
}

/// Issue 43 item 8: a service bound to 0.0.0.0 was reached through the host's own
/// network address (and its `[::ffff:…]` spelling). The host's addresses are refused too.
@Suite struct OwnAddressPolicyTests {
    let own: Set<IPAddress> = [IPAddress("172.31.9.4")!, IPAddress("2a01:4f8::4")!, IPAddress("93.184.216.40")!]

    @Test(arguments: ["93.184.216.40", "::ffff:93.184.216.40", "::ffff:0:93.184.216.40", "64:ff9b::93.184.216.40",
                      "2002:5db8:d828::1", "2a01:4f8::4", "[2a01:4f8::4]"])
    func theHostsOwnAddressesAreRefusedInEverySpelling(ip: String) throws {
        let reason = try #require(AddressPolicy.refusalCategory(ip: ip, ownAddresses: own))
        #expect(reason.contains("an address of this host"), "\(ip): \(reason)")
        #expect(AddressPolicy.refusalCategory(ip: ip) == nil || ip.hasPrefix("172."), "without the host's addresses it was allowed")
    }

    @Test func otherAddressesAreJudgedAsBefore() {
        #expect(AddressPolicy.refusalCategory(ip: "93.184.216.41", ownAddresses: own) == nil)
        #expect(AddressPolicy.refusalCategory(ip: "127.0.0.1", ownAddresses: own)?.contains("loopback") == true)
        #expect(AddressPolicy.refusalCategory(ip: "172.31.9.4", ownAddresses: own)?.contains("private") == true,
                "a private own address keeps its own reason")
    }
}

@Suite struct IPAddressTests {
    @Test(arguments: [
        ("1.2.3.4", "1.2.3.4"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:db8:0:0:0:0:2:1", "2001:db8::2:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("::", "::"),
        ("1::", "1::"),
        ("::ffff:0a00:0001", "::ffff:10.0.0.1"),
        ("[fe80::1%25eth0]", "fe80::1"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
    ])
    func canonicalText(input: String, expected: String) throws {
        let address = try #require(IPAddress(input))
        #expect(address.description == expected)
    }

    @Test func rejectsMalformed() {
        for text in ["", ":", ":::", "1:2", "1.2.3.4.5", "g::1", "::1%", "1.2.3.-4", " 1.2.3.4", "1:2:3:4:5:6:7::8:9"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }
}

/// The refusal phrase follows "ADDRESS is" once: the transport and the worker name the address themselves.
@Suite struct AddressPolicyPhraseTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1 is in loopback 127.0.0.0/8"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1 is IPv4-mapped 127.0.0.1, which is in loopback 127.0.0.0/8"),
        ("64:ff9b::a00:1", "64:ff9b::a00:1 is NAT64 for 10.0.0.1, which is in the private network 10.0.0.0/8"),
        ("2002:7f00:1::", "2002:7f00:1:: is 6to4 for 127.0.0.1, which is in loopback 127.0.0.0/8"),
        ("255.255.255.255", "255.255.255.255 is the broadcast address"),
    ])
    func reasonsNameTheAddressOnce(ip: String, reason: String) throws {
        #expect(AddressPolicy.forbiddenReason(ip: ip) == reason)
        let phrase = try #require(AddressPolicy.refusalCategory(ip: ip))
        #expect(reason == "\(try #require(IPAddress(ip))) is \(phrase)")
        #expect(!phrase.contains(ip), "the phrase must not repeat the address: \(phrase)")
    }
}
