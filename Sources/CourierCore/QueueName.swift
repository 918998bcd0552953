/// The one rule for queue names: 1 to ``maximumLength`` characters of ASCII letters,
/// digits and ``punctuation``, that is the pattern ``pattern``.
///
/// The SQL side says the same in `courier.queue_name`, `courier.enqueue`,
/// `courier.enqueue_job` and `courier.queue_settings`; a test (QueueNameAgreementTests)
/// checks every one of them against ``isValid(_:)`` value by value.
public enum QueueName {
    /// The longest name, in characters (all ASCII, so bytes too).
    public static let maximumLength = 64
    /// The characters allowed besides ASCII letters and digits.
    public static let punctuation = "_.:-"
    /// The rule as a POSIX regular expression, as PostgreSQL reads it.
    public static let pattern = "^[A-Za-z0-9\(punctuation)]{1,\(maximumLength)}$"

    /// Whether `text` is a valid queue name (checked byte by byte: a regular
    /// expression per job was a measurable part of a bulk load).
    public static func isValid(_ text: String) -> Bool {
        let utf8 = text.utf8
        return (1...maximumLength).contains(utf8.count) && utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || punctuation.utf8.contains(byte)
        }
    }

    /// `text` if valid; otherwise an error naming `field`.
    @discardableResult
    public static func validate(_ text: String, field: String = "queue") throws(ValidationError) -> String {
        guard isValid(text) else {
            throw ValidationError(field: field, message: "\(Quoting.quote(text)) is not a valid queue name: \(rule)")
        }
        return text
    }

    /// The rule in words, for error messages.
    public static let rule = "1 to \(maximumLength) characters of letters, digits, \(punctuation.map(String.init).joined(separator: " "))"
}
