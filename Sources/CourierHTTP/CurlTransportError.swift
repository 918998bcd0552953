/// Why a ``CurlTransport`` could not be created. The description names the field.
public struct CurlTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case invalidConfiguration(field: String, reason: String)
        case curlInitFailed
    }

    let code: Code

    /// A configuration field has a value the transport cannot use.
    public static func invalidConfiguration(field: String, reason: String) -> CurlTransportError {
        CurlTransportError(code: .invalidConfiguration(field: field, reason: reason))
    }

    /// libcurl could not create its multi handle.
    public static let curlInitFailed = CurlTransportError(code: .curlInitFailed)

    /// The name of the offending configuration field, if any.
    public var field: String? {
        if case .invalidConfiguration(let field, _) = code { return field }
        return nil
    }

    public var description: String {
        switch code {
        case .invalidConfiguration(let field, let reason):
            return "invalid transport configuration: \(field) \(reason)"
        case .curlInitFailed:
            return "libcurl could not create a multi handle"
        }
    }
}
