import Foundation

extension FaultServer {
    /// When one request was being served: from the moment it had been read to the moment
    /// its answer was written or its client left (CLOCK_MONOTONIC nanoseconds).
    public struct RequestSpan: Sendable {
        public var path: String
        public var startNanos: UInt64
        /// Nil while it is still being served.
        public var endNanos: UInt64?
        /// True when the client closed the connection before the answer (see ``Behavior/holdUntilClientLeaves(delay:then:)``).
        public var clientLeft = false
    }

    /// One request as the server read it.
    public struct RecordedRequest: Sendable {
        /// The method, as sent.
        public var method: String
        /// The request target, query included (for example `/hook?x=1`).
        public var path: String
        /// The headers in the order received.
        public var headers: [(name: String, value: String)]
        /// The body (de-chunked if it was sent chunked).
        public var body: [UInt8]
        /// Wall-clock time at which the request had been read completely.
        public var arrivedAt: Date
        /// The same moment on CLOCK_MONOTONIC, in nanoseconds (see ``FaultServer/monotonicNanos()``).
        public var arrivalNanos: UInt64
        /// Which accepted connection carried it (1 for the first connection).
        public var connectionID: Int

        /// The value of the first header called `name` (case-insensitive), if any.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The body decoded as UTF-8.
        public var bodyText: String { String(decoding: body, as: UTF8.self) }

        /// The path without its query string.
        public var pathWithoutQuery: String {
            path.firstIndex(of: "?").map { String(path[..<$0]) } ?? path
        }
    }
}
