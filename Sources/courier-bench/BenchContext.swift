import CourierStore
import Foundation
import Postgres

/// What every subcommand needs: the database (reached through libpq's PG* variables,
/// which bench/run.sh points at its private cluster), the built binaries, and where
/// results and logs go.
struct BenchContext {
    /// The benchmark database's name; the connection string is `dbname=NAME`, so PGHOST,
    /// PGPORT and PGUSER select the cluster, for this process and the workers alike.
    let database: String
    /// Directory holding the release `jobworker` and `jobctl`.
    let binDirectory: String
    /// Scratch files and worker logs.
    let workDirectory: String
    let log: ResultLog
    /// The cluster's data directory, to find the postmaster for the CPU split (optional).
    let dataDirectory: String?

    static let commonOptions = ["db", "bin-dir", "work-dir", "out", "pg-data"]

    init(_ options: BenchOptions) throws {
        database = options.string("db", default: "courier_bench")
        binDirectory = options.string("bin-dir", default: ProcessInfo.processInfo.environment["COURIER_BIN_DIR"] ?? "")
        workDirectory = options.string("work-dir", default: NSTemporaryDirectory() + "courier-bench")
        log = ResultLog(path: options.string("out", default: workDirectory + "/courier.jsonl"))
        let data = options.string("pg-data", default: "")
        dataDirectory = data.isEmpty ? nil : data
        guard !binDirectory.isEmpty else { throw BenchError("--bin-dir (or COURIER_BIN_DIR) is required: the release build's bin directory") }
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
    }

    var connectionString: String { "dbname=\(database)" }

    func connect() throws -> PostgresConnection {
        try PostgresConnection.connect(PostgresConfiguration(connectionString: connectionString, applicationName: "courier-bench"))
    }

    /// Whether `courier.jobs` has `column` in the schema this database was migrated to (a
    /// baseline build may predate it), so a probe can name the predicate of today's indexes.
    static func jobsHaveColumn(_ column: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query(PostgresQuery(unsafeSQL: """
            select exists (select 1 from pg_attribute where attrelid = 'courier.jobs'::regclass and attname = $1 and not attisdropped)
            """, binds: [column])).rows[0].decode(0, as: Bool.self)
    }

    var postmasterPID: pid_t? { dataDirectory.flatMap { ProcStats.postmasterPID(dataDirectory: $0) } }

    /// Drops and recreates the database, then applies Courier's migrations.
    func createDatabase() throws {
        let admin = try PostgresConnection.connect(PostgresConfiguration(connectionString: "dbname=postgres", applicationName: "courier-bench"))
        defer { admin.close() }
        guard database.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { throw BenchError("--db: use letters, digits and _") }
        try admin.simpleQuery("drop database if exists \(database) with (force)")
        try admin.simpleQuery("create database \(database)")
        let connection = try connect()
        defer { connection.close() }
        _ = try Migrator.migrate(connection)
    }

    /// Empties every Courier table, then VACUUM ANALYZE and CHECKPOINT, as the peers
    /// harness does before each repetition.
    func resetQueue(_ connection: PostgresConnection) throws {
        try connection.simpleQuery("""
            truncate courier.jobs, courier.completed_jobs, courier.dead_letters, courier.breakers,
                     courier.breaker_events, courier.workers, courier.attempt_stats
            """)
        try connection.simpleQuery("vacuum analyze courier.jobs")
        try connection.simpleQuery("vacuum analyze courier.completed_jobs")
        try connection.simpleQuery("checkpoint")
    }

    /// The fairness keys of inserted jobs.
    enum Keys {
        /// Every job under this key.
        case one(String)
        /// Spread over this many keys in turn (`k0`, `k1`, ...).
        case spread(Int)
    }

    /// Inserts `count` jobs in one statement: `noop` jobs, or GETs of `url`; under `keys` when
    /// given (the column is named only then: a baseline before migration 0045 has none).
    func insertJobs(_ connection: PostgresConnection, count: Int, queue: String, url: String?, keys: Keys? = nil) throws {
        var binds: [any PostgresEncodable] = [queue, count]
        var columns = "kind, destination, args, queue", values = "'noop', 'job:noop', '{}', $1::text"
        if let url {
            binds.append(url)
            columns = "kind, destination, method, url, queue"
            values = "'http', courier.destination_of($3::text), 'GET', $3::text, $1::text"
        }
        switch keys {
        case .one(let name):
            binds.append(name)
            columns += ", fairness_key"
            values += ", $\(binds.count)::text"
        case .spread(let n):
            binds.append(n)
            columns += ", fairness_key"
            values += ", 'k' || (g % $\(binds.count)::int)"
        case nil:
            break
        }
        try connection.execute(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (\(columns))
            select \(values) from generate_series(1, $2::int) g
            """, binds: binds))
    }

    func count(_ connection: PostgresConnection, _ sql: String) throws -> Int {
        try connection.query(PostgresQuery(unsafeSQL: sql)).rows[0].decode(0, as: Int.self)
    }

    /// The highest job id in `courier.jobs` (0 when empty): one probe of the primary key.
    func lastJobID(_ connection: PostgresConnection) throws -> Int64 {
        try connection.query(PostgresQuery(unsafeSQL: "select coalesce(max(id), 0)::bigint from courier.jobs")).rows[0]
            .decode(0, as: Int64.self)
    }
}
