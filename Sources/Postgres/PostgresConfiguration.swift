/// Where and how to connect.
///
/// `connectionString` is anything libpq accepts: a URI
/// (`postgresql://user@host:5432/db?sslmode=verify-full`), a key=value conninfo
/// (`host=/tmp port=5432 dbname=db`), a bare database name, or `""` to use only the
/// `PG*` environment variables and libpq defaults. TLS is libpq's: put `sslmode`,
/// `sslrootcert` etc. in the connection string (or `PGSSLMODE`).
///
/// Every connection additionally gets `client_encoding=UTF8` (unless given). The session
/// settings the decoders prefer (``sessionSetup``) are SET after connecting rather than
/// sent as the `options` startup parameter, which PgBouncer refuses by default; the
/// decoders also read what the server sends when a pooler loses them (see
/// ``PostgresConnection/isPooled``).
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// libpq URI or key=value conninfo; `""` means libpq defaults and `PG*` variables.
    public var connectionString: String
    /// `application_name` shown in `pg_stat_activity`; overrides one in the string.
    public var applicationName: String?
    /// Prepared statements kept per connection (LRU). `0` disables the cache (every
    /// query then uses `PQexecParams`). A connection that finds itself behind a pooler
    /// disables it on its own (``PostgresConnection/isPooled``).
    public var statementCacheCapacity: Int
    /// TCP keepalives (and `tcp_user_timeout`) for TCP connections; nil leaves libpq's
    /// defaults (the kernel's: two hours). Parameters in the connection string win.
    public var keepalive: Keepalive?
    /// The longest a statement's answer is waited for on the client side. Nil waits as
    /// long as the server takes. Past it the connection is closed and the call throws a
    /// connection loss: a frozen link or server (which TCP keepalives cannot notice while
    /// the far end's kernel still acknowledges) then ends in a reconnect instead of a
    /// thread blocked forever. The server's `statement_timeout` cannot do this.
    public var responseTimeout: Duration?

    /// libpq's `keepalives_idle`, `keepalives_interval`, `keepalives_count` (seconds, count)
    /// and `tcp_user_timeout` (milliseconds), which libpq ignores on Unix-domain sockets, and
    /// `connect_timeout` (seconds, at least 2), so a connect to a silent server gives up too.
    public struct Keepalive: Sendable, Equatable {
        public var idleSeconds: Int
        public var intervalSeconds: Int
        public var count: Int
        public var userTimeoutMilliseconds: Int
        public var connectTimeoutSeconds: Int
        public init(idleSeconds: Int = 5, intervalSeconds: Int = 2, count: Int = 3, userTimeoutMilliseconds: Int = 15_000,
                    connectTimeoutSeconds: Int = 10) {
            self.idleSeconds = idleSeconds
            self.intervalSeconds = intervalSeconds
            self.count = count
            self.userTimeoutMilliseconds = userTimeoutMilliseconds
            self.connectTimeoutSeconds = connectTimeoutSeconds
        }
    }

    public init(connectionString: String, applicationName: String? = nil, statementCacheCapacity: Int = 128,
                keepalive: Keepalive? = nil, responseTimeout: Duration? = nil) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.statementCacheCapacity = statementCacheCapacity
        self.keepalive = keepalive
        self.responseTimeout = responseTimeout
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

    /// Run once on every new (or reset) session, in one round trip: the settings the
    /// decoders prefer, and the server's own process id, which tells a pooled session
    /// from a direct one. PgBouncer replays TimeZone and DateStyle on whichever server
    /// connection it lends (it tracks reported settings); bytea_output is not reported,
    /// so the bytea decoder also reads the escape format.
    static let sessionSetup = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET bytea_output = 'hex'; SELECT pg_backend_pid()"

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
        if let keepalive {
            func setDefault(_ key: String, _ value: Int) {
                if !parameters.contains(where: { $0.key == key }) { set(key, String(value)) }
            }
            setDefault("keepalives", 1)
            setDefault("keepalives_idle", keepalive.idleSeconds)
            setDefault("keepalives_interval", keepalive.intervalSeconds)
            setDefault("keepalives_count", keepalive.count)
            setDefault("tcp_user_timeout", keepalive.userTimeoutMilliseconds)
            setDefault("connect_timeout", keepalive.connectTimeoutSeconds)
        }
        return parameters
    }
}
