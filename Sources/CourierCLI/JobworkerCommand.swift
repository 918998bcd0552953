/// The declaration of the `jobworker` command line: every flag, its default
/// and its `COURIER_<NAME>` environment variable.
///
/// The worker module reads the values with ``ParsedCommand``'s typed getters;
/// defaults live here only, so help and behaviour cannot disagree.
public enum JobworkerCommand {
    /// The environment variable for a worker flag: `breaker-failures` → `COURIER_BREAKER_FAILURES`.
    public static func environmentVariable(for long: String) -> String {
        "COURIER_" + String(long.uppercased().map { $0 == "-" ? "_" : $0 })
    }

    private static func option(
        _ long: String, value: String, help: String, defaultValue: String? = nil, allowedValues: [String]? = nil
    ) -> ArgumentSpec {
        .option(long, value: value, help: help, defaultValue: defaultValue,
                environmentVariable: environmentVariable(for: long), allowedValues: allowedValues)
    }

    /// `jobworker [OPTIONS]`.
    public static let spec = CommandSpec(
        name: "jobworker",
        abstract: "Run a Courier worker: lease jobs from PostgreSQL and deliver their HTTP requests, with classified retries and shared circuit breakers.",
        discussion: """
            Many workers may run at once, on many machines, sharing one database. \
            Every option can also be set through the environment variable shown \
            with it; the command line wins. Durations are written 250ms, 30s, 5m, \
            2h or 1h30m.

            SIGTERM and SIGINT start a graceful shutdown: the worker stops leasing, \
            hands back jobs it has not started, gives in-flight jobs until \
            --shutdown-grace to finish, hands back the rest and exits 0.
            """,
        arguments: [
            .option("database-url", value: "URL",
                    help: "The database: a libpq URI or key=value conninfo. The PG* variables apply too, as in libpq.",
                    environmentVariable: "DATABASE_URL"),
            option("listen-database-url", value: "URL",
                   help: "Where to LISTEN for new jobs and cancellations: a direct connection (or a session-mode pool) when --database-url goes through a transaction-mode pooler such as PgBouncer. Without it a worker behind a pooler polls every --poll-interval."),
            option("queues", value: "LIST", help: "Comma-separated queues to take jobs from.", defaultValue: "default"),
            option("concurrency", value: "N", help: "How many jobs this worker runs at once.", defaultValue: "32"),
            option("lease", value: "DURATION",
                   help: "How long a claimed job stays reserved; heartbeats extend it while the job runs, and another worker rescues it when it expires.",
                   defaultValue: "30s"),
            option("shutdown-grace", value: "DURATION",
                   help: "On SIGTERM or SIGINT, how long in-flight jobs may finish before they are aborted and handed back.",
                   defaultValue: "25s"),
            option("claim-batch", value: "N",
                   help: "The most jobs one claim statement leases; claims are sized to the free slots up to this.",
                   defaultValue: "100"),
            option("poll-interval", value: "DURATION",
                   help: "How often to look for due jobs when no notification arrives.", defaultValue: "1s"),
            option("backoff", value: "STRATEGY", help: "How the delay between attempts grows.",
                   defaultValue: "exponential", allowedValues: ["exponential", "linear", "constant"]),
            option("backoff-base", value: "DURATION",
                   help: "The delay before the first retry, and the step of linear backoff.", defaultValue: "1s"),
            option("backoff-cap", value: "DURATION", help: "The longest delay between attempts.", defaultValue: "10m"),
            option("jitter", value: "MODE", help: "How retry delays are randomized, so that retries spread out.",
                   defaultValue: "full", allowedValues: ["full", "equal", "decorrelated", "none"]),
            option("retry-after-cap", value: "DURATION",
                   help: "The longest wait a destination's Retry-After header can impose.", defaultValue: "1h"),
            option("breaker-failures", value: "N",
                   help: "Consecutive failures that open a destination's circuit breaker.", defaultValue: "5"),
            option("breaker-window", value: "DURATION",
                   help: "The window over which a high failure rate also opens the breaker, once enough requests were made.",
                   defaultValue: "60s"),
            option("breaker-min-volume", value: "N",
                   help: "Requests needed within the window before the failure rate counts.", defaultValue: "20"),
            option("breaker-failure-rate", value: "RATIO",
                   help: "The failure rate, from above 0 to 1, that opens the breaker once the volume is reached.",
                   defaultValue: "0.5"),
            option("breaker-cooldown", value: "DURATION",
                   help: "How long an open breaker waits before one probe request is let through; doubled, with jitter, after each failed probe.",
                   defaultValue: "30s"),
            option("breaker-cooldown-max", value: "DURATION", help: "The longest breaker cooldown.", defaultValue: "10m"),
            option("retention", value: "DURATION",
                   help: "How long succeeded jobs stay visible to 'jobctl show' before they are pruned. 0 keeps none: a success only deletes the job, the fastest setting. Give every worker of a fleet the same value.",
                   defaultValue: "24h"),
            option("dead-letter-retention", value: "DURATION",
                   help: "Purge dead letters older than DURATION automatically. Off when not set: dead letters stay until 'jobctl dead purge'."),
            option("max-response-body", value: "BYTES",
                   help: "The most response body bytes read per attempt, for the expect_content_type check and dead-letter excerpts; the rest is discarded. A JSON body longer than this is checked only as far as it was read.",
                   defaultValue: "65536"),
            option("metrics-addr", value: "HOST:PORT",
                   help: "Serve /metrics (Prometheus), /healthz and /readyz on this address. Off when not set."),
            option("secrets-dir", value: "DIR",
                   help: "A directory with one file per secret (such as a mounted Kubernetes Secret), for header values written {\"secret\": \"NAME\"}. The file NAME.destinations beside a secret lists the destinations it may be sent to (secrets without one are never sent). COURIER_SECRET_NAME and COURIER_SECRET_NAME_DESTINATIONS variables are checked first."),
            option("log-format", value: "FORMAT", help: "One line per event, as logfmt or JSON.",
                   defaultValue: "logfmt", allowedValues: ["logfmt", "json"]),
            option("log-level", value: "LEVEL", help: "The least severe level that is logged.",
                   defaultValue: "info", allowedValues: ["debug", "info", "warning", "error"]),
            .flag("allow-private-networks",
                  help: "Allow destinations on loopback, private, link-local and unique-local addresses, which are refused by default.",
                  environmentVariable: environmentVariable(for: "allow-private-networks")),
        ],
        examples: [
            "jobworker --database-url postgresql://courier@db.internal/courier",
            "jobworker --queues default,webhooks --concurrency 64 \\\n    --metrics-addr 0.0.0.0:9464 --log-format json",
            "COURIER_BREAKER_FAILURES=3 COURIER_JITTER=equal jobworker",
        ]
    )
}
