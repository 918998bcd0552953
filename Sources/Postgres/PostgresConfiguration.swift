/// Where and how to connect.
///
/// `connectionString` is anything libpq accepts: a URI
/// (`postgresql://user@host:5432/db?sslmode=verify-full`), a key=value conninfo
/// (`host=/tmp port=5432 dbname=db`), a bare database name, or `""` to use only the
/// `PG*` environment variables and libpq defaults. TLS is libpq's: put `sslmode`,
/// `sslrootcert` etc. in the connection string (or `PGSSLMODE`).
///
/// Every connection additionally gets `client_encoding=UTF8` (unless given) and the
/// session settings `TimeZone=UTC`, `DateStyle=ISO`, `bytea_output=hex` (appended to
/// libpq's `options`), which the value decoders rely on.
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// libpq URI or key=value conninfo; `""` means libpq defaults and `PG*` variables.
    public var connectionString: String
    /// `application_name` shown in `pg_stat_activity`; overrides one in the string.
    public var applicationName: String?
    /// Prepared statements kept per connection (LRU). `0` disables the cache
    /// (every query then uses `PQexecParams`, e.g. behind a transaction-mode pooler).
    public var statementCacheCapacity: Int

    public init(connectionString: String, applicationName: String? = nil, statementCacheCapacity: Int = 128) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.statementCacheCapacity = statementCacheCapacity
    }

    /// The value of a `--database-url` flag when given and not empty, else
    /// `environment["DATABASE_URL"]` when not empty, else `""` (libpq's `PG*` variables).
    public static func resolve(flag: String?, environment: [String: String], applicationName: String? = nil) -> PostgresConfiguration {
        if let flag, !flag.isEmpty {
            return PostgresConfiguration(connectionString: flag, applicationName: applicationName)
        }
        if let url = environment["DATABASE_URL"], !url.isEmpty {
            return PostgresConfiguration(connectionString: url, applicationName: applicationName)
        }
        return PostgresConfiguration(connectionString: "", applicationName: applicationName)
    }

    /// The configuration with any password masked (safe to log).
    public var description: String {
        "PostgresConfiguration(\(PostgresConnectionString.redacted(connectionString)))"
    }

    /// The session settings appended to libpq's `options` parameter.
    static let sessionOptions = "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex"

    /// The keyword/value pairs handed to `PQconnectdbParams` (with `expand_dbname = 0`).
    func connectParameters() throws -> [(key: String, value: String)] {
        var parameters = try PostgresConnectionString.parse(connectionString)
        func set(_ key: String, _ value: String) {
            if let index = parameters.firstIndex(where: { $0.key == key }) {
                parameters[index].value = value
            } else {
                parameters.append((key, value))
            }
        }
        if let applicationName { set("application_name", applicationName) }
        if !parameters.contains(where: { $0.key == "application_name" }) {
            set("fallback_application_name", "courier")
        }
        if !parameters.contains(where: { $0.key == "client_encoding" }) {
            set("client_encoding", "UTF8")
        }
        if let index = parameters.firstIndex(where: { $0.key == "options" }) {
            parameters[index].value += " " + PostgresConfiguration.sessionOptions
        } else {
            set("options", PostgresConfiguration.sessionOptions)
        }
        return parameters
    }
}
