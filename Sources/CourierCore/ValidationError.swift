/// Bad input, named by the field it came from.
///
/// Every validation in `CourierCore` throws this type, so callers at the
/// boundary (SQL, jobctl flags, NDJSON lines) can report *which* field was
/// wrong. The description is `"<field>: <message>"` and never contains more of
/// the input than the message chose to quote.
public struct ValidationError: Error, Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The name of the offending field or flag, for example `url` or `--lease`.
    public var field: String
    /// What is wrong, written for a person.
    public var message: String

    /// Creates an error for `field`.
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    /// `"<field>: <message>"`.
    public var description: String { "\(field): \(message)" }
}
