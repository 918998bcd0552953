import CourierCore
import Foundation
import Postgres

/// Per-queue retry defaults (`courier.queue_settings`), shared by the fleet.
public enum QueueSettingsTable {
    /// One queue's overrides; nil fields fall back to the worker's flags.
    public struct Settings: Sendable, Equatable {
        public var queue: String
        public var backoff: String?
        public var backoffBaseMilliseconds: Int64?
        public var backoffCapMilliseconds: Int64?
        public var backoffMultiplier: Double?
        public var jitter: String?
        public var retryAfterCapMilliseconds: Int64?
        /// The head start each point of priority gives within the queue (milliseconds); nil
        /// keeps priority strict. Read by the claim in SQL, not by workers' retry policies.
        public var priorityHeadStartMilliseconds: Int64?
        /// Whether the queue is paused (`jobctl queue pause`); set only through ``setPaused(queue:_:on:)``.
        public var paused = false
        public init(queue: String, backoff: String? = nil, backoffBaseMilliseconds: Int64? = nil,
                    backoffCapMilliseconds: Int64? = nil, backoffMultiplier: Double? = nil, jitter: String? = nil,
                    retryAfterCapMilliseconds: Int64? = nil) {
            self.queue = queue
            self.backoff = backoff
            self.backoffBaseMilliseconds = backoffBaseMilliseconds
            self.backoffCapMilliseconds = backoffCapMilliseconds
            self.backoffMultiplier = backoffMultiplier
            self.jitter = jitter
            self.retryAfterCapMilliseconds = retryAfterCapMilliseconds
        }
    }

    /// Every queue's row, by queue name.
    public static func all(on connection: PostgresConnection) throws -> [Settings] {
        try connection.query("""
            select queue, backoff, backoff_base_ms, backoff_cap_ms, backoff_multiplier, jitter, retry_after_cap_ms, paused,
                   priority_head_start_ms
            from courier.queue_settings order by queue
            """).rows.map(settings)
    }

    /// Creates or replaces a queue's settings.
    public static func upsert(_ s: Settings, on connection: PostgresConnection) throws {
        try connection.query("""
            insert into courier.queue_settings (queue, backoff, backoff_base_ms, backoff_cap_ms, backoff_multiplier, jitter,
                                                retry_after_cap_ms)
            values (\(s.queue), \(s.backoff), \(s.backoffBaseMilliseconds), \(s.backoffCapMilliseconds), \(s.backoffMultiplier),
                    \(s.jitter), \(s.retryAfterCapMilliseconds))
            on conflict (queue) do update
            set backoff = excluded.backoff, backoff_base_ms = excluded.backoff_base_ms, backoff_cap_ms = excluded.backoff_cap_ms,
                backoff_multiplier = excluded.backoff_multiplier, jitter = excluded.jitter,
                retry_after_cap_ms = excluded.retry_after_cap_ms, updated_at = now()
            """)
    }

    /// Sets the fields of `changes` that are not nil and keeps the queue's other stored
    /// fields (a queue without a row gets one); `clearHeadStart` removes the priority head
    /// start. Returns the queue's row afterwards.
    public static func merge(_ changes: Settings, clearHeadStart: Bool = false, on connection: PostgresConnection) throws -> Settings {
        let rows = try connection.query("""
            insert into courier.queue_settings (queue, backoff, backoff_base_ms, backoff_cap_ms, backoff_multiplier, jitter,
                                                retry_after_cap_ms, priority_head_start_ms)
            values (\(changes.queue), \(changes.backoff), \(changes.backoffBaseMilliseconds), \(changes.backoffCapMilliseconds),
                    \(changes.backoffMultiplier), \(changes.jitter), \(changes.retryAfterCapMilliseconds),
                    \(changes.priorityHeadStartMilliseconds))
            on conflict (queue) do update
            set backoff = coalesce(excluded.backoff, queue_settings.backoff),
                backoff_base_ms = coalesce(excluded.backoff_base_ms, queue_settings.backoff_base_ms),
                backoff_cap_ms = coalesce(excluded.backoff_cap_ms, queue_settings.backoff_cap_ms),
                backoff_multiplier = coalesce(excluded.backoff_multiplier, queue_settings.backoff_multiplier),
                jitter = coalesce(excluded.jitter, queue_settings.jitter),
                retry_after_cap_ms = coalesce(excluded.retry_after_cap_ms, queue_settings.retry_after_cap_ms),
                priority_head_start_ms = case when \(clearHeadStart) then null
                                              else coalesce(excluded.priority_head_start_ms, queue_settings.priority_head_start_ms) end,
                updated_at = now()
            returning queue, backoff, backoff_base_ms, backoff_cap_ms, backoff_multiplier, jitter, retry_after_cap_ms, paused,
                      priority_head_start_ms
            """).rows
        guard let row = rows.first else { throw PostgresError(kind: .protocolViolation, message: "queue_settings upsert returned no row") }
        return try settings(row)
    }

    /// Deletes a queue's row, so its jobs follow each worker's flags again. Returns
    /// whether there was one.
    public static func remove(queue: String, on connection: PostgresConnection) throws -> Bool {
        try connection.execute("delete from courier.queue_settings where queue = \(queue)") > 0
    }

    /// Whether `name` is a valid queue name (the rule of `courier.jobs.queue`).
    public static func isValidQueueName(_ name: String) -> Bool { QueueName.isValid(name) }

    private static func settings(_ row: PostgresRow) throws -> Settings {
        Settings(queue: try row.decode(0, as: String.self), backoff: try row.decode(1, as: String?.self),
                 backoffBaseMilliseconds: try row.decode(2, as: Int64?.self),
                 backoffCapMilliseconds: try row.decode(3, as: Int64?.self),
                 backoffMultiplier: try row.decode(4, as: Double?.self), jitter: try row.decode(5, as: String?.self),
                 retryAfterCapMilliseconds: try row.decode(6, as: Int64?.self))
            .withPaused(try row.decode(7, as: Bool.self), headStart: try row.decode(8, as: Int64?.self))
    }
}

extension QueueSettingsTable {
    /// Pauses or resumes `queue` for the whole fleet (`courier.queue_pause`): claims of a
    /// paused queue take nothing, running jobs finish, waiting ones use no attempts.
    /// Returns whether it was paused before.
    @discardableResult
    public static func setPaused(queue: String, _ paused: Bool, on connection: PostgresConnection) throws -> Bool {
        try connection.query("select courier.queue_pause(\(queue), \(paused))").rows[0].decode(0, as: Bool.self)
    }

    /// The queues paused right now, by name.
    public static func paused(on connection: PostgresConnection) throws -> [String] {
        try connection.query("select queue from courier.queue_settings where paused order by queue")
            .rows.map { try $0.decode(0, as: String.self) }
    }
}

extension QueueSettingsTable.Settings {
    func withPaused(_ paused: Bool, headStart: Int64?) -> Self {
        var copy = self
        copy.paused = paused
        copy.priorityHeadStartMilliseconds = headStart
        return copy
    }
}
