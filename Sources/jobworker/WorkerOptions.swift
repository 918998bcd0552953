import CourierCLI
import CourierCore
import CourierWorker
import CourierStore

/// Reads a `WorkerConfiguration` from the parsed command line (flags, then
/// `COURIER_*` variables, then the declared defaults).
enum WorkerOptions {
    static func configuration(from command: ParsedCommand, environment: [String: String]) throws -> WorkerConfiguration {
        var c = WorkerConfiguration(database: DatabaseConfiguration.resolve(flag: command.value("database-url"), environment: environment))
        c.database.applicationName = "jobworker"
        if let listen = command.value("listen-database-url"), !listen.isEmpty {
            c.listenDatabase = DatabaseConfiguration(connectionString: listen, applicationName: "jobworker-listen")
        }
        c.queues = try command.list("queues")
        c.concurrency = try command.int("concurrency", range: 1...10_000) ?? c.concurrency
        c.lease = try command.duration("lease", minimum: .seconds(1)) ?? c.lease
        c.shutdownGrace = try command.duration("shutdown-grace") ?? c.shutdownGrace
        c.claimBatch = try command.int("claim-batch", range: 1...10_000) ?? c.claimBatch
        c.pollInterval = try command.duration("poll-interval", minimum: .milliseconds(10)) ?? c.pollInterval
        if let strategy = command.value("backoff"), let parsed = BackoffPolicy.Strategy(rawValue: strategy) {
            c.retryPolicy.backoff.strategy = parsed
        }
        c.retryPolicy.backoff.base = try command.duration("backoff-base") ?? c.retryPolicy.backoff.base
        c.retryPolicy.backoff.cap = try command.duration("backoff-cap") ?? c.retryPolicy.backoff.cap
        if let jitter = command.value("jitter"), let parsed = BackoffPolicy.Jitter(rawValue: jitter) {
            c.retryPolicy.backoff.jitter = parsed
        }
        c.retryPolicy.retryAfterCap = try command.duration("retry-after-cap") ?? c.retryPolicy.retryAfterCap
        c.breakerPolicy.failureThreshold = try command.int("breaker-failures", range: 1...1_000_000) ?? c.breakerPolicy.failureThreshold
        c.breakerPolicy.window = try command.duration("breaker-window", minimum: .seconds(1)) ?? c.breakerPolicy.window
        c.breakerPolicy.minimumVolume = try command.int("breaker-min-volume", range: 1...1_000_000_000) ?? c.breakerPolicy.minimumVolume
        c.breakerPolicy.failureRateThreshold = try command.double("breaker-failure-rate", range: 0.000_001...1)
            ?? c.breakerPolicy.failureRateThreshold
        c.breakerPolicy.cooldown = try command.duration("breaker-cooldown", minimum: .milliseconds(100)) ?? c.breakerPolicy.cooldown
        c.breakerPolicy.cooldownMax = try command.duration("breaker-cooldown-max", minimum: .milliseconds(100)) ?? c.breakerPolicy.cooldownMax
        c.retention = try command.duration("retention", minimum: .zero) ?? c.retention
        c.deadLetterRetention = try command.duration("dead-letter-retention", minimum: .seconds(60))
        c.maxResponseBytes = try command.int("max-response-body", range: 0...(64 << 20)) ?? c.maxResponseBytes
        c.metricsAddress = command.value("metrics-addr")
        c.secretsDirectory = command.value("secrets-dir")
        c.allowPrivateNetworks = command.flag("allow-private-networks")
        return c
    }
}
