/// Why a job went to `courier.dead_letters`. The raw values are the contract's names.
public enum DeadLetterReason: String, Sendable, CaseIterable, Codable {
    /// A failure retrying cannot fix (a 4xx, a refused destination, ...).
    case permanent
    /// A 2xx whose body broke the job's expectation.
    case invalidResponse = "invalid_response"
    /// `max_attempts` were used.
    case exhausted
    /// The next attempt would have fallen after the job's deadline.
    case deadline
    /// The request may have been delivered and the job is not safe to repeat.
    case ambiguous
    /// An operator cancelled the job.
    case cancelled

    /// Parses a stored reason, naming `field` on error.
    public static func parse(_ text: String, field: String = "reason") throws(ValidationError) -> DeadLetterReason {
        guard let value = DeadLetterReason(rawValue: text) else {
            throw ValidationError(field: field, message: "unknown reason \(Quoting.quote(text)); expected one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }
}
