import Postgres

/// courier.jobs is partitioned (sql/0048): its rows, statistics and storage options belong to
/// its partitions, which these helpers reach for tests that read or set them.
public enum JobsPartitions {
    /// The partitions of courier.jobs (oids), as a subquery.
    public static let relids = "select relid from pg_partition_tree('courier.jobs') where isleaf"

    /// Turns autovacuum off (or on) for every partition, so no ANALYZE changes the statistics a test set up.
    public static func setAutovacuum(_ enabled: Bool, on db: PostgresConnection) throws {
        for row in try db.query(PostgresQuery(unsafeSQL: "select relid::regclass::text from pg_partition_tree('courier.jobs') where isleaf")).rows {
            try db.simpleQuery("alter table \(try row.decode(0, as: String.self)) set (autovacuum_enabled = \(enabled))")
        }
    }
}

extension JobsPartitions {
    /// Inserts `n` jobs of http://ring.test/x into ring slot `slot` (naming it, as no caller of
    /// courier.jobs does), due `runInSeconds` from now. Returns their ids.
    @discardableResult
    public static func insert(_ n: Int, slot: Int, runInSeconds: Int = -1, on db: PostgresConnection) throws -> [Int64] {
        try db.query("""
            insert into courier.jobs (destination, url, run_at, slot)
            select 'http://ring.test:80', 'http://ring.test/x', now() + \(runInSeconds)::int * interval '1 second', \(slot)::smallint
            from generate_series(1, \(n)::int) returning id
            """).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// The bytes of heap of ring slot `slot`'s partition (0 once it is truncated).
    public static func heapBytes(slot: Int, on db: PostgresConnection) throws -> Int {
        try db.query(PostgresQuery(unsafeSQL: "select pg_relation_size('courier.jobs_\(slot)')::bigint")).rows[0].decode(0, as: Int.self)
    }
}
