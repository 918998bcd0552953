import Foundation

/// Resolves `{"secret": "NAME"}` header values at send time, so credentials never
/// sit in the database: first `COURIER_SECRET_<NAME>` in the worker's environment
/// (NAME upper-cased, `-` and `.` as `_`), then the file `NAME` in the secrets
/// directory (for example a mounted Kubernetes Secret), trailing newline removed.
public struct SecretResolver: Sendable {
    private let environment: [String: String]
    private let directory: String?

    public init(environment: [String: String], directory: String?) {
        self.environment = environment
        self.directory = directory
    }

    public static func environmentName(for name: String) -> String {
        "COURIER_SECRET_" + String(name.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// The secret's value, or nil when neither source has it.
    public func resolve(_ name: String) -> String? {
        if let value = environment[Self.environmentName(for: name)] { return value }
        guard let directory, !name.contains("/"), !name.hasPrefix(".") else { return nil }
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
        var text = String(decoding: data, as: UTF8.self)
        // By scalar: "\r\n" is one Character, which hasSuffix("\n") does not match.
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        return text
    }
}
