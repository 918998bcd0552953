/// Which signing secret NAME applies to a job, and where it came from: the job's own
/// wins over its destination's default. Names only; values never leave the worker.
public struct SigningSecretChoice: Sendable, Equatable {
    /// Where the name came from.
    public enum Source: String, Sendable, Encodable {
        /// The job's own `signing_secret`.
        case job
        /// The default of its destination in `courier.destinations`.
        case destination
    }

    public var name: String
    public var source: Source

    public init(name: String, source: Source) {
        self.name = name
        self.source = source
    }

    /// The choice for a job with these names; nil when neither is set (the job is not signed).
    public static func choose(own: String?, destinationDefault: String?) -> SigningSecretChoice? {
        if let own { return SigningSecretChoice(name: own, source: .job) }
        return destinationDefault.map { SigningSecretChoice(name: $0, source: .destination) }
    }

    /// The SQL expression for the destination default of the row whose destination is `column`.
    static func destinationDefaultSQL(for column: String) -> String {
        "(select sd.signing_secret from courier.destinations sd where sd.destination = \(column))"
    }
}
