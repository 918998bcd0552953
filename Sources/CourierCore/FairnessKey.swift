/// The rule for a fairness key, the tenant a job works for (issue 42): 1 to 128 printable
/// ASCII characters without spaces. The same rule as `courier.is_fairness_key` (sql/0045);
/// `FairnessKeyAgreementTests` holds the two together. A job without a key shares the
/// default key, which is no key's name.
public enum FairnessKey {
    /// The longest key, in characters.
    public static let maximumLength = 128
    /// The rule in words, as `courier.fairness_key_rule()` says it.
    public static let rule = "must be 1 to 128 printable ASCII characters without spaces"

    /// Whether `key` is a valid fairness key.
    public static func isValid(_ key: String) -> Bool {
        let bytes = key.utf8
        return (1...maximumLength).contains(bytes.count) && bytes.allSatisfy { (0x21...0x7e).contains($0) }
    }

    /// `key`, or a ``ValidationError`` naming `field`.
    public static func validate(_ key: String, field: String = "fairness_key") throws(ValidationError) {
        guard isValid(key) else { throw ValidationError(field: field, message: rule) }
    }
}
