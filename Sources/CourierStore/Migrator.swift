import Postgres

/// Applies the migrations in `Migration.all` that a database has not seen yet.
///
/// Safe to run repeatedly and from several processes at once: all the work
/// happens in one transaction that first takes a transaction-scoped advisory
/// lock, so a second migrator waits, then finds nothing left to do.
public enum Migrator {
    /// An arbitrary constant that identifies Courier's migration lock ("courier" in ASCII).
    static let advisoryLockKey: Int64 = 0x636F_7572_6965_72

    /// Applies pending migrations and returns the ones applied by this call.
    @discardableResult
    public static func migrate(_ connection: PostgresConnection, migrations: [Migration] = Migration.all) throws -> [Migration] {
        try connection.withTransaction { tx in
            try tx.query("select pg_advisory_xact_lock(\(advisoryLockKey))")
            try tx.simpleQuery("""
                create schema if not exists courier;
                create table if not exists courier.schema_migrations (
                    version    int primary key,
                    name       text not null,
                    applied_at timestamptz not null default now()
                );
                """)
            let applied = Set(try tx.query("select version from courier.schema_migrations").rows.map { try $0.decode(0, as: Int.self) })
            var done: [Migration] = []
            for migration in migrations where !applied.contains(migration.version) {
                try tx.simpleQuery(migration.sql)
                try tx.query("insert into courier.schema_migrations (version, name) values (\(migration.version), \(migration.name))")
                done.append(migration)
            }
            return done
        }
    }

    /// The versions a database has applied, oldest first; empty for a database Courier never touched.
    public static func appliedVersions(_ connection: PostgresConnection) throws -> [Int] {
        let exists = try connection.query("select to_regclass('courier.schema_migrations') is not null")
        guard try exists.rows.first?.decode(0, as: Bool.self) == true else { return [] }
        return try connection.query("select version from courier.schema_migrations order by version").rows.map {
            try $0.decode(0, as: Int.self)
        }
    }

    /// The SQL `migrate` would run, for a DBA to read (`jobctl migrate --print`).
    public static func script(migrations: [Migration] = Migration.all) -> String {
        migrations.map { "-- \($0.name)\n\($0.sql)" }.joined(separator: "\n")
    }
}
