/// How a transport's connection limits are divided among its driver threads.
///
/// Each driver thread has a libcurl multi handle, and so a connection pool and limits,
/// of its own. The shares of a limit add up to exactly the limit, so the drivers together
/// never open more connections to a host than ``CurlTransport/Configuration/maxHostConnections``
/// allows, nor more in total. A limit smaller than the thread count would leave some
/// thread a share of 0, which libcurl reads as "no limit", so the transport then runs
/// fewer threads instead.
struct DriverShares {
    /// Each driver thread's configuration, one per thread: the transport's, with the
    /// thread's share of each connection limit.
    let configurations: [CurlTransport.Configuration]

    /// The limits divided among the threads, each written once here.
    static let limits: [WritableKeyPath<CurlTransport.Configuration, Int> & Sendable] = [
        \.maxHostConnections, \.maxTotalConnections, \.maxCachedConnections,
    ]

    init(_ configuration: CurlTransport.Configuration) {
        var threads = max(1, configuration.driverThreads)
        // Every positive limit must give each thread at least one connection.
        for limit in Self.limits.map({ configuration[keyPath: $0] }) where limit > 0 {
            threads = min(threads, limit)
        }
        configurations = (0..<threads).map { index in
            var share = configuration
            for limit in Self.limits {
                share[keyPath: limit] = Self.share(of: configuration[keyPath: limit], thread: index, of: threads)
            }
            return share
        }
    }

    /// Thread `index`'s part of `limit` (0, no limit, stays 0): the remainder goes one each
    /// to the first threads, so the parts differ by at most one and add up to `limit`.
    static func share(of limit: Int, thread index: Int, of threads: Int) -> Int {
        guard limit > 0 else { return 0 }
        return limit / threads + (index < limit % threads ? 1 : 0)
    }
}
