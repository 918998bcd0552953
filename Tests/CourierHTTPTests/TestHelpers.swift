import CourierCore
import CourierTestSupport
import Foundation
@testable import CourierHTTP

/// A transport for tests; loopback is allowed unless a test is about the guard.
func makeTransport(
    allowPrivateNetworks: Bool = true,
    maxResponseBodyBytes: Int = 1 << 20,
    maxHostConnections: Int = 128,
    addressGuard: (@Sendable (String) -> String?)? = nil,
    idleWaitMilliseconds: Int32? = nil,
    driverThreads: Int = CurlTransport.Configuration.defaultDriverThreads
) throws -> CurlTransport {
    var configuration = CurlTransport.Configuration(
        maxResponseBodyBytes: maxResponseBodyBytes,
        allowPrivateNetworks: allowPrivateNetworks,
        addressGuard: addressGuard,
        maxHostConnections: maxHostConnections,
        driverThreads: driverThreads
    )
    if let idleWaitMilliseconds { configuration.idleWaitMilliseconds = idleWaitMilliseconds }
    return try CurlTransport(configuration: configuration)
}

extension TransportOutcome {
    var response: HTTPResponseSummary? {
        if case .response(let r) = self { return r }
        return nil
    }

    var blockedReason: String? {
        if case .blocked(let reason) = self { return reason }
        if case .refusedByConfiguration(let reason) = self { return reason }
        return nil
    }
}

extension HTTPResponseSummary {
    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    var bodyText: String { String(decoding: bodyPrefix, as: UTF8.self) }
}



/// Collects values from any thread (for spying on the address guard).
final class Collector<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []

    func append(_ item: T) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var values: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
