import Foundation

/// A Standard Webhooks signing secret: one or more keys, each written `whsec_<base64>`.
/// During a rotation the value holds several, separated by spaces; each signs the
/// request, so a receiver that knows either the old or the new one can verify.
///
/// The value never appears in an error or a description: errors name the secret by
/// the name it was resolved from.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    /// The prefix every key carries.
    public static let prefix = "whsec_"

    /// The decoded keys, in the order written.
    public let keys: [[UInt8]]

    /// Parses a secret's value. `name` is only used in the error message.
    public init(parsing value: String, name: String) throws(WebhookSigningError) {
        var keys: [[UInt8]] = []
        // Space-separated; tabs and the newline of a file written by hand count as spaces too.
        for part in value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
            guard part.hasPrefix(Self.prefix) else {
                throw WebhookSigningError.malformed(name: name, problem: "a part does not start with \(Self.prefix)")
            }
            // Padding may be left out, as the official verifiers allow (whsec_ secrets often omit it).
            var text = String(part.dropFirst(Self.prefix.count))
            if text.utf8.count % 4 != 1 { text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4) }
            guard let key = Data(base64Encoded: text), !key.isEmpty else {
                throw WebhookSigningError.malformed(name: name, problem: "a part is not \(Self.prefix) followed by base64")
            }
            keys.append(Array(key))
        }
        guard !keys.isEmpty else {
            throw WebhookSigningError.malformed(name: name, problem: "the value is empty")
        }
        self.keys = keys
    }

    /// Never the keys.
    public var description: String { "WebhookSecret(\(keys.count) key\(keys.count == 1 ? "" : "s"))" }
}

/// Why a job could not be signed. The description names the secret, never its value.
public enum WebhookSigningError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The secret's value is not `whsec_<base64>` (space-separated for a rotation).
    case malformed(name: String, problem: String)

    public var description: String {
        switch self {
        case .malformed(let name, let problem):
            "signing secret '\(name)' is malformed (\(problem)); expected whsec_<base64>, several separated by spaces during a rotation"
        }
    }
}
