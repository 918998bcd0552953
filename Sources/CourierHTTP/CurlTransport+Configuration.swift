import CourierCore
import Foundation

extension CurlTransport {
    /// Settings for a ``CurlTransport``. Every field has a documented default.
    public struct Configuration: Sendable {
        /// Response bodies longer than this keep only their first bytes and are
        /// reported with `bodyTruncated` set (the transfer stops reading there).
        /// Default 1 MiB.
        public var maxResponseBodyBytes: Int
        /// When `true`, the address guard is off and loopback, private and
        /// link-local destinations are allowed. Default `false`.
        public var allowPrivateNetworks: Bool
        /// Judges the IP address a connection is about to be made to (and, as a
        /// second check, the address it was made to). Returns `nil` to allow, or a
        /// phrase that follows "IP is" to refuse (`"in loopback 127.0.0.0/8"`); the
        /// outcome then reads `destination address IP is PHRASE; pass
        /// --allow-private-networks to allow`. The default is CourierCore's
        /// `AddressPolicy.refusalCategory(ip:ownAddresses:)` with this host's own addresses
        /// (``HostAddresses/defaultGuard``), the same policy the worker uses.
        public var addressGuard: @Sendable (String) -> String?
        /// At most this many connections to one host (`0` = no limit). Default 128.
        public var maxHostConnections: Int
        /// At most this many connections in total (`0` = no limit). Default 0.
        public var maxTotalConnections: Int
        /// How many idle keep-alive connections are kept for reuse. Default 256.
        public var maxCachedConnections: Int
        /// The `User-Agent` header unless a request sets its own. Default `courier/0.1`.
        public var userAgent: String
        /// How many threads drive transfers, each with a libcurl multi handle of its own.
        /// Each request goes to the thread with the fewest requests (the first on a tie), and
        /// the connection limits above are divided among the threads (see `DriverShares`),
        /// so together they keep to the limits. A thread runs its transfers' callbacks and
        /// reads their responses, and under load one thread is the transport's bottleneck; a
        /// second lets a busy worker use a second core for that. Each thread keeps its own
        /// connections, so while the worker is busy a host may see one connection per thread
        /// where one would have done. Default ``defaultDriverThreads``.
        public var driverThreads: Int
        /// How long the driver's thread waits in `curl_multi_poll` when neither a socket,
        /// a libcurl timer nor a caller wakes it: a safety net only. Tests set it to
        /// minutes, so that a lost wake-up hangs them instead of hiding behind it.
        var idleWaitMilliseconds: Int32 = 1_000

        /// Creates a configuration; see each property for its default.
        public init(
            maxResponseBodyBytes: Int = 1 << 20,
            allowPrivateNetworks: Bool = false,
            addressGuard: (@Sendable (String) -> String?)? = nil,
            maxHostConnections: Int = 128,
            maxTotalConnections: Int = 0,
            maxCachedConnections: Int = 256,
            userAgent: String = "courier/0.1",
            driverThreads: Int = Configuration.defaultDriverThreads
        ) {
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.allowPrivateNetworks = allowPrivateNetworks
            self.addressGuard = addressGuard ?? HostAddresses.defaultGuard
            self.maxHostConnections = maxHostConnections
            self.maxTotalConnections = maxTotalConnections
            self.maxCachedConnections = maxCachedConnections
            self.userAgent = userAgent
            self.driverThreads = driverThreads
        }

        /// Two threads, or one on a one-core machine. On two cores one worker's HTTP drain at
        /// `--concurrency 256` ran 1.15× as fast with two as with one, and level or faster in
        /// the other configurations measured (bench/notes.md, session 19). More than two was
        /// not measured; a fleet scales by running more workers.
        public static var defaultDriverThreads: Int { min(2, ProcessInfo.processInfo.activeProcessorCount) }

        /// Throws naming the first field whose value cannot be used.
        func validate() throws {
            if maxResponseBodyBytes < 0 {
                throw CurlTransportError.invalidConfiguration(field: "maxResponseBodyBytes", reason: "must be 0 or more")
            }
            if maxHostConnections < 0 {
                throw CurlTransportError.invalidConfiguration(field: "maxHostConnections", reason: "must be 0 or more")
            }
            if maxTotalConnections < 0 {
                throw CurlTransportError.invalidConfiguration(field: "maxTotalConnections", reason: "must be 0 or more")
            }
            if maxCachedConnections < 1 {
                throw CurlTransportError.invalidConfiguration(field: "maxCachedConnections", reason: "must be 1 or more")
            }
            if driverThreads < 1 {
                throw CurlTransportError.invalidConfiguration(field: "driverThreads", reason: "must be 1 or more")
            }
            if userAgent.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                throw CurlTransportError.invalidConfiguration(field: "userAgent", reason: "must not contain CR, LF or NUL")
            }
        }
    }
}
