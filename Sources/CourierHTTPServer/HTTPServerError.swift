/// The HTTP server could not start. The description names the address and
/// the system's reason.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The host name did not resolve to an address.
        case resolve
        /// socket(), bind() or listen() failed, typically "Address already in use".
        case bind
        /// The server was started twice.
        case alreadyStarted
    }

    public let code: Code
    public let address: String
    public let reason: String

    init(_ code: Code, address: String, reason: String) {
        self.code = code
        self.address = address
        self.reason = reason
    }

    public var description: String {
        switch code {
        case .resolve: "cannot resolve the address \(address): \(reason)"
        case .bind: "cannot listen on \(address): \(reason)"
        case .alreadyStarted: "the HTTP server on \(address) is already running"
        }
    }
}
