import CourierCLI
import CourierCore
import Foundation
import CourierStore

/// The declaration of the `jobworker` command line: every flag, its default and its
/// `COURIER_<NAME>` environment variable, and how the parsed values become a
/// ``WorkerConfiguration``.
///
/// Nothing here is retyped: defaults come from ``WorkerConfiguration/defaults``
/// (formatted with the one duration grammar), ranges from ``WorkerConfiguration/Bounds``,
/// and value lists from the enums' cases in declaration order.
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

    private static func duration(_ value: Duration) -> String { DurationParser.format(value) }

    private static func names<E: CaseIterable & RawRepresentable>(_ type: E.Type) -> [String] where E.RawValue == String {
        E.allCases.map(\.rawValue)
    }

    /// `jobworker [OPTIONS]`.
    public static let spec: CommandSpec = {
        let d = WorkerConfiguration.defaults
        return CommandSpec(
        name: "jobworker",
        abstract: "Run a Courier worker: lease jobs from PostgreSQL and deliver their HTTP requests, with classified retries and shared circuit breakers.",
        discussion: """
            Many workers may run at once, on many machines, sharing one database. \
            Every option can also be set through the environment variable shown \
            with it; the command line wins. Durations are written 250ms, 1.5s, 5m, \
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
            option("queues", value: "LIST", help: "Comma-separated queues to take jobs from.", defaultValue: d.queues.joined(separator: ",")),
            option("concurrency", value: "N", help: "How many jobs this worker runs at once.", defaultValue: String(d.concurrency)),
            option("lease", value: "DURATION",
                   help: "How long a claimed job stays reserved; heartbeats extend it while the job runs and until its result is written, and another worker rescues it when it expires. A worker whose renewals go unanswered for most of it aborts its requests and claims nothing; size it from courier_lease_renewal_seconds.",
                   defaultValue: duration(d.lease)),
            option("shutdown-grace", value: "DURATION",
                   help: "On SIGTERM or SIGINT, how long in-flight jobs may finish before they are aborted and handed back.",
                   defaultValue: duration(d.shutdownGrace)),
            option("claim-batch", value: "N",
                   help: "The most jobs one claim statement leases; claims are sized to the free slots up to this.",
                   defaultValue: String(d.claimBatch)),
            option("poll-interval", value: "DURATION",
                   help: "How often to look for due jobs when no notification arrives.", defaultValue: duration(d.pollInterval)),
            option("backoff", value: "STRATEGY", help: "How the delay between attempts grows.",
                   defaultValue: d.retryPolicy.backoff.strategy.rawValue, allowedValues: names(BackoffPolicy.Strategy.self)),
            option("backoff-base", value: "DURATION",
                   help: "The delay before the first retry, and the step of linear backoff.", defaultValue: duration(d.retryPolicy.backoff.base)),
            option("backoff-cap", value: "DURATION", help: "The longest delay between attempts.", defaultValue: duration(d.retryPolicy.backoff.cap)),
            option("jitter", value: "MODE", help: "How retry delays are randomized, so that retries spread out.",
                   defaultValue: d.retryPolicy.backoff.jitter.rawValue, allowedValues: names(BackoffPolicy.Jitter.self)),
            option("retry-after-cap", value: "DURATION",
                   help: "The longest wait a destination's Retry-After header can impose.", defaultValue: duration(d.retryPolicy.retryAfterCap)),
            option("breaker-failures", value: "N",
                   help: "Consecutive failures that open a destination's circuit breaker.", defaultValue: String(d.breakerPolicy.failureThreshold)),
            option("breaker-window", value: "DURATION",
                   help: "The window over which a high failure rate also opens the breaker, once enough requests were made.",
                   defaultValue: duration(d.breakerPolicy.window)),
            option("breaker-min-volume", value: "N",
                   help: "Requests needed within the window before the failure rate counts.", defaultValue: String(d.breakerPolicy.minimumVolume)),
            option("breaker-failure-rate", value: "RATIO",
                   help: "The failure rate, from above 0 to 1, that opens the breaker once the volume is reached.",
                   defaultValue: String(d.breakerPolicy.failureRateThreshold)),
            option("breaker-cooldown", value: "DURATION",
                   help: "How long an open breaker waits before one probe request is let through; doubled, with jitter, after each failed probe.",
                   defaultValue: duration(d.breakerPolicy.cooldown)),
            option("breaker-cooldown-max", value: "DURATION", help: "The longest breaker cooldown.", defaultValue: duration(d.breakerPolicy.cooldownMax)),
            option("breaker-min-timeout", value: "DURATION",
                   help: "A timeout counts against a destination's breaker only when the job allowed at least this long; shorter job timeouts say nothing about the destination.",
                   defaultValue: duration(d.breakerPolicy.timeoutEvidenceFloor)),
            option("retention", value: "DURATION",
                   help: "How long succeeded jobs stay visible to 'jobctl show' before they are pruned. 0 keeps none: a success only deletes the job, the fastest setting. Give every worker of a fleet the same value.",
                   defaultValue: duration(d.retention)),
            option("dead-letter-retention", value: "DURATION",
                   help: "Purge dead letters older than DURATION automatically. Off when not set: dead letters stay until 'jobctl dead purge'."),
            option("max-response-body", value: "BYTES",
                   help: "The most response body bytes read per attempt, for the expect_content_type check and dead-letter excerpts; the rest is discarded. A JSON body longer than this is checked only as far as it was read.",
                   defaultValue: String(d.maxResponseBytes)),
            option("metrics-addr", value: "HOST:PORT",
                   help: "Serve /metrics (Prometheus), /healthz and /readyz on this address. Off when not set."),
            option("secrets-dir", value: "DIR",
                   help: "A directory with one file per secret (such as a mounted Kubernetes Secret), for header values written {\"secret\": \"NAME\"}. The file NAME.destinations beside a secret lists the destinations it may be sent to (secrets without one are never sent). COURIER_SECRET_NAME and COURIER_SECRET_NAME_DESTINATIONS variables are checked first."),
            option("log-format", value: "FORMAT", help: "One line per event, as logfmt or JSON.",
                   defaultValue: Logger.Format.logfmt.rawValue, allowedValues: names(Logger.Format.self)),
            option("log-level", value: "LEVEL", help: "The least severe level that is logged.",
                   defaultValue: Logger.Level.info.flagName, allowedValues: Logger.Level.allCases.map(\.flagName)),
            option("otlp-endpoint", value: "URL",
                   help: "Export a span per attempt over OTLP/HTTP (protobuf) to this collector base URL (/v1/traces is appended), as OTEL_EXPORTER_OTLP_ENDPOINT does; it wins over the OTEL_* endpoints. Off when neither is set. The other OTEL_* variables apply (docs/tracing.md)."),
            option("trace-sample-ratio", value: "R",
                   help: "Record this share of traces, 0 to 1 (parentbased_traceidratio); OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG otherwise, else every trace."),
            .flag("trace-child-of-enqueue",
                  help: "Make each attempt's span a child of the span the job was enqueued in, not only linked to it.",
                  environmentVariable: environmentVariable(for: "trace-child-of-enqueue")),
            .flag("allow-private-networks",
                  help: "Allow destinations on loopback, private, link-local and unique-local addresses, which are refused by default.",
                  environmentVariable: environmentVariable(for: "allow-private-networks")),
        ],
        examples: [
            "jobworker --database-url postgresql://courier@db.internal/courier",
            "jobworker --queues default,webhooks --concurrency 64 \\\n    --metrics-addr 0.0.0.0:9464 --log-format json",
            "COURIER_BREAKER_FAILURES=3 COURIER_JITTER=equal jobworker",
        ])
    }()
}

extension WorkerConfiguration {
    /// The ranges the worker's flags accept, checked by ``validate()`` and by the
    /// command line alike (`--concurrency 0` and `COURIER_CONCURRENCY=0` name the flag).
    public enum Bounds {
        public static let concurrency = 1...10_000
        public static let claimBatch = 1...10_000
        public static let minimumLease: Duration = .seconds(1)
        public static let minimumPollInterval: Duration = .milliseconds(10)
        public static let breakerFailures = 1...1_000_000
        public static let breakerMinimumVolume = 1...1_000_000_000
        public static let breakerFailureRate = 0.000_001...1
        public static let minimumBreakerWindow: Duration = .seconds(1)
        public static let minimumBreakerCooldown: Duration = .milliseconds(100)
        public static let minimumDeadLetterRetention: Duration = .seconds(60)
        public static let maxResponseBytes = 0...(64 << 20)
    }

    /// The defaults, as one value (the database left to libpq's defaults).
    public static let defaults = WorkerConfiguration(database: DatabaseConfiguration(connectionString: ""))

    /// Reads a configuration from the parsed `jobworker` command line (flags, then
    /// `COURIER_*` variables, then ``defaults``).
    public init(command: ParsedCommand, environment: [String: String]) throws(UsageError) {
        let d = Self.defaults
        self.init(database: DatabaseConfiguration.resolve(flag: command.value("database-url"), environment: environment))
        database.applicationName = "jobworker"
        if let listen = command.value("listen-database-url"), !listen.isEmpty {
            listenDatabase = DatabaseConfiguration(connectionString: listen, applicationName: "jobworker-listen")
        }
        queues = try command.list("queues")
        concurrency = try command.int("concurrency", range: Bounds.concurrency) ?? d.concurrency
        lease = try command.duration("lease", minimum: Bounds.minimumLease) ?? d.lease
        shutdownGrace = try command.duration("shutdown-grace") ?? d.shutdownGrace
        claimBatch = try command.int("claim-batch", range: Bounds.claimBatch) ?? d.claimBatch
        pollInterval = try command.duration("poll-interval", minimum: Bounds.minimumPollInterval) ?? d.pollInterval
        retryPolicy.backoff.strategy = try command.enumValue("backoff", as: BackoffPolicy.Strategy.self) ?? d.retryPolicy.backoff.strategy
        retryPolicy.backoff.base = try command.duration("backoff-base") ?? d.retryPolicy.backoff.base
        retryPolicy.backoff.cap = try command.duration("backoff-cap") ?? d.retryPolicy.backoff.cap
        retryPolicy.backoff.jitter = try command.enumValue("jitter", as: BackoffPolicy.Jitter.self) ?? d.retryPolicy.backoff.jitter
        retryPolicy.retryAfterCap = try command.duration("retry-after-cap") ?? d.retryPolicy.retryAfterCap
        breakerPolicy.failureThreshold = try command.int("breaker-failures", range: Bounds.breakerFailures) ?? d.breakerPolicy.failureThreshold
        breakerPolicy.window = try command.duration("breaker-window", minimum: Bounds.minimumBreakerWindow) ?? d.breakerPolicy.window
        breakerPolicy.minimumVolume = try command.int("breaker-min-volume", range: Bounds.breakerMinimumVolume) ?? d.breakerPolicy.minimumVolume
        breakerPolicy.failureRateThreshold = try command.double("breaker-failure-rate", range: Bounds.breakerFailureRate)
            ?? d.breakerPolicy.failureRateThreshold
        breakerPolicy.cooldown = try command.duration("breaker-cooldown", minimum: Bounds.minimumBreakerCooldown) ?? d.breakerPolicy.cooldown
        breakerPolicy.cooldownMax = try command.duration("breaker-cooldown-max", minimum: Bounds.minimumBreakerCooldown) ?? d.breakerPolicy.cooldownMax
        breakerPolicy.timeoutEvidenceFloor = try command.duration("breaker-min-timeout", minimum: .zero) ?? d.breakerPolicy.timeoutEvidenceFloor
        retention = try command.duration("retention", minimum: .zero) ?? d.retention
        deadLetterRetention = try command.duration("dead-letter-retention", minimum: Bounds.minimumDeadLetterRetention)
        maxResponseBytes = try command.int("max-response-body", range: Bounds.maxResponseBytes) ?? d.maxResponseBytes
        metricsAddress = command.value("metrics-addr")
        secretsDirectory = command.value("secrets-dir")
        allowPrivateNetworks = command.flag("allow-private-networks")
        let ratio = try command.double("trace-sample-ratio", range: 0...1)
        do throws(ValidationError) {
            tracing = try TracingConfiguration.read(environment: environment, endpointFlag: command.value("otlp-endpoint"),
                                                    sampleRatioFlag: ratio, childOfEnqueue: command.flag("trace-child-of-enqueue"))
        } catch {
            throw UsageError(code: .invalidValue, field: error.field, message: error.message, commandPath: ["jobworker"])
        }
    }
}

extension Logger.Level {
    /// The name `--log-level` takes (`warn` is read too, see ``init(name:)``).
    public var flagName: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }
}
