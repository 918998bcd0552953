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
