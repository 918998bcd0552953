import CourierCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The addresses of this host's own interfaces, for the SSRF guard
/// (``AddressPolicy/refusalCategory(ip:ownAddresses:)``): a service bound to 0.0.0.0 answers
/// on them as on loopback. Read with `getifaddrs` and kept for ``refreshEvery``, so the
/// guard, called per connection, costs a lock and a set look-up; an interface that gains
/// an address is seen within that time.
public final class HostAddresses: Sendable {
    /// The one reader the default guards share.
    public static let shared = HostAddresses()
    /// How long a reading is used before the interfaces are read again.
    public static let refreshEvery: Duration = .seconds(10)

    private let cache = Locked<(at: ContinuousClock.Instant, addresses: Set<IPAddress>)?>(nil)

    public init() {}

    /// The host's addresses now (at most ``refreshEvery`` old).
    public func current(now: ContinuousClock.Instant = .now) -> Set<IPAddress> {
        if let cached = cache.withLock({ $0 }), now - cached.at < Self.refreshEvery { return cached.addresses }
        let addresses = Self.read()
        cache.withLock { $0 = (now, addresses) }
        return addresses
    }

    /// Every IPv4 and IPv6 address of every interface, read from the kernel.
    public static func read() -> Set<IPAddress> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var addresses: Set<IPAddress> = []
        var next = first
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let socketAddress = entry.pointee.ifa_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET:
                socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var raw = v4.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
            case AF_INET6:
                socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var raw = v6.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
            default:
                continue
            }
            if let address = IPAddress(String(cString: text)) { addresses.insert(address) }
        }
        return addresses
    }

    /// The guard the worker and the transport use by default: the address policy, with
    /// this host's own addresses refused too.
    public static let defaultGuard: @Sendable (String) -> String? = { ip in
        AddressPolicy.refusalCategory(ip: ip, ownAddresses: shared.current())
    }
}
