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
    ///
    /// Each applied migration's SHA-256 is recorded (computed by PostgreSQL from the
    /// text). A migration whose text differs from the one applied throws
    /// ``ChangedMigrationError`` before anything is applied: a migration must never be
    /// edited once released, because databases that ran the old text would not match.
    /// Rows from before checksums were recorded get this build's checksum.
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
                alter table courier.schema_migrations add column if not exists checksum text;
                """)
            let rows = try tx.query("select version, checksum from courier.schema_migrations").rows
            var applied: [Int: String?] = [:]
            for row in rows { applied[try row.decode(0, as: Int.self)] = try row.decode(1, as: String?.self) }
            for migration in migrations {
                guard let stored = applied[migration.version] else { continue }
                let current = try checksum(migration, on: tx)
                if let stored, stored != current {
                    throw ChangedMigrationError(name: migration.name, applied: stored, current: current)
                }
                if stored == nil {
                    try tx.query("update courier.schema_migrations set checksum = \(current) where version = \(migration.version)")
                }
            }
            var done: [Migration] = []
            for migration in migrations where applied[migration.version] == nil {
                try tx.simpleQuery(migration.sql)
                try tx.query("""
                    insert into courier.schema_migrations (version, name, checksum)
                    values (\(migration.version), \(migration.name), encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex'))
                    """)
                done.append(migration)
            }
            return done
        }
    }

    /// The SHA-256 of a migration's text, as hex, computed by the server.
    static func checksum(_ migration: Migration, on connection: PostgresConnection) throws -> String {
        try connection.query("select encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex')").rows[0].decode(0, as: String.self)
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

/// A migration's text differs from the text the database applied.
public struct ChangedMigrationError: Error, CustomStringConvertible, Sendable {
    public var name: String
    public var applied: String
    public var current: String

    public var description: String {
        "migration \(name) differs from the one this database applied (SHA-256 \(applied.prefix(12))…, this build \(current.prefix(12))…): released migrations must not be edited; nothing was applied"
    }
}
