import Foundation
import Postgres

/// Per-destination policy (`courier.destinations`), shared by the fleet. Today one
/// policy: the default signing secret NAME of the destination's jobs. Workers read it
/// when they claim a job (see `ClaimedJob.columns`), so a change applies to the next claim.
public enum DestinationsTable {
    /// One destination's row; nil fields are "no policy".
    public struct Policy: Sendable, Equatable, Encodable {
        public var destination: String
        /// The signing secret NAME used for the destination's jobs that name none.
        public var signingSecret: String?
        public var createdAt: Date?
        public var updatedAt: Date?

        public init(destination: String, signingSecret: String? = nil, createdAt: Date? = nil, updatedAt: Date? = nil) {
            self.destination = destination
            self.signingSecret = signingSecret
            self.createdAt = createdAt
            self.updatedAt = updatedAt
        }

        enum CodingKeys: String, CodingKey {
            case destination, signingSecret = "signing_secret", createdAt = "created_at", updatedAt = "updated_at"
        }

        public func encode(to encoder: any Encoder) throws {
            // Every policy field appears, null where the destination sets none.
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(destination, forKey: .destination)
            try c.encode(signingSecret, forKey: .signingSecret)
            try c.encodeIfPresent(createdAt, forKey: .createdAt)
            try c.encodeIfPresent(updatedAt, forKey: .updatedAt)
        }
    }

    static let columns = "destination, signing_secret, created_at, updated_at"

    /// Every destination's row, by destination.
    public static func all(on connection: PostgresConnection) throws -> [Policy] {
        try connection.query(PostgresQuery(unsafeSQL: "select \(columns) from courier.destinations order by destination"))
            .rows.map(policy)
    }

    /// Sets the fields of `changes` that are not nil and keeps the destination's other
    /// fields, through `courier.destination_set` (which normalises the destination as
    /// enqueue derives it: a URL becomes scheme://host:port). Returns the row afterwards.
    public static func merge(_ changes: Policy, on connection: PostgresConnection) throws -> Policy {
        let rows = try connection.query(PostgresQuery(unsafeSQL: """
            select \(columns) from courier.destination_set(destination => $1, signing_secret => $2)
            """, binds: [changes.destination, changes.signingSecret]))
        guard let row = rows.rows.first else {
            throw PostgresError(kind: .protocolViolation, message: "courier.destination_set returned no row")
        }
        return try policy(row)
    }

    /// Deletes a destination's row (normalised as in ``merge(_:on:)``). Returns whether there was one.
    public static func remove(destination: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("select courier.destination_reset(\(destination))").rows[0].decode(0, as: Bool.self)
    }

    private static func policy(_ row: PostgresRow) throws -> Policy {
        Policy(destination: try row.decode(0, as: String.self), signingSecret: try row.decode(1, as: String?.self),
               createdAt: try row.decode(2, as: Date?.self), updatedAt: try row.decode(3, as: Date?.self))
    }
}
