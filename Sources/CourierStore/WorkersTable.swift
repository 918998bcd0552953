import Foundation
import Postgres

/// Statements about `courier.workers`, the registry of live workers.
public enum WorkersTable {
    /// What a worker says about itself when it registers.
    public struct Registration: Sendable, Equatable {
        public var id: UUID
        public var host: String
        public var pid: Int
        public var queues: [String]
        public var concurrency: Int
        public var version: String
        public var heartbeatIntervalMilliseconds: Int
        public init(id: UUID, host: String, pid: Int, queues: [String], concurrency: Int, version: String,
                    heartbeatIntervalMilliseconds: Int) {
            self.id = id
            self.host = host
            self.pid = pid
            self.queues = queues
            self.concurrency = concurrency
            self.version = version
            self.heartbeatIntervalMilliseconds = heartbeatIntervalMilliseconds
        }
    }

    /// Registers (or re-registers after a database outage) a worker.
    public static func register(_ r: Registration, on connection: PostgresConnection) throws {
        try connection.query("""
            insert into courier.workers (id, host, pid, queues, concurrency, version, heartbeat_interval_ms)
            values (\(r.id), \(r.host), \(r.pid), \(r.queues), \(r.concurrency), \(r.version), \(r.heartbeatIntervalMilliseconds))
            on conflict (id) do update set heartbeat_at = now()
            """)
    }

    /// Records that the worker is alive; `stopping` marks a graceful shutdown in progress.
    /// Returns false when the row is gone (it aged out during an outage), so the caller re-registers.
    public static func heartbeat(id: UUID, stopping: Bool, on connection: PostgresConnection) throws -> Bool {
        try connection.execute("""
            update courier.workers
            set heartbeat_at = now(), stopping_at = case when \(stopping) then coalesce(stopping_at, now()) end
            where id = \(id)
            """) == 1
    }

    /// Removes the worker's row at the end of a graceful shutdown.
    public static func deregister(id: UUID, on connection: PostgresConnection) throws {
        try connection.query("delete from courier.workers where id = \(id)")
    }

    /// Deletes rows of workers that missed many heartbeats (they died without deregistering).
    @discardableResult
    public static func pruneDead(on connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            delete from courier.workers
            where heartbeat_at < now() - greatest(heartbeat_interval_ms * 10, 60000) * interval '1 millisecond'
            """)
    }

    /// A worker as `jobctl workers` shows it.
    public struct LiveWorker: Sendable, Equatable, Encodable {
        public var id: String
        public var host: String
        public var pid: Int
        public var queues: [String]
        public var concurrency: Int
        public var version: String
        public var startedAt: Date
        public var heartbeatAt: Date
        public var stopping: Bool
        /// Ids of the jobs this worker holds leases on.
        public var jobs: [Int64]

        enum CodingKeys: String, CodingKey {
            case id, host, pid, queues, concurrency, version, startedAt = "started_at", heartbeatAt = "heartbeat_at"
            case stopping, jobs
        }
    }

    /// Workers whose last heartbeat is within three intervals, with the jobs they hold.
    public static func live(on connection: PostgresConnection) throws -> [LiveWorker] {
        try connection.query("""
            select w.id::text, w.host, w.pid, w.queues, w.concurrency, w.version, w.started_at, w.heartbeat_at,
                   w.stopping_at is not null,
                   coalesce((select array_agg(j.id order by j.id) from courier.jobs j
                             where j.state = 'running' and j.leased_by = w.id), '{}')
            from courier.workers w
            where w.heartbeat_at > now() - 3 * w.heartbeat_interval_ms * interval '1 millisecond'
            order by w.started_at
            """).rows.map { row in
            LiveWorker(
                id: try row.decode(0, as: String.self), host: try row.decode(1, as: String.self),
                pid: try row.decode(2, as: Int.self), queues: try row.decode(3, as: [String].self),
                concurrency: try row.decode(4, as: Int.self), version: try row.decode(5, as: String.self),
                startedAt: try row.decode(6, as: Date.self), heartbeatAt: try row.decode(7, as: Date.self),
                stopping: try row.decode(8, as: Bool.self), jobs: try row.decode(9, as: [Int64].self)
            )
        }
    }
}
