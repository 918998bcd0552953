import CourierCore
import CourierStore
import Foundation


/// Everything a worker is told by flags or `COURIER_*` variables, with documented defaults.
public struct WorkerConfiguration: Sendable {
    /// Where the queue lives.
    public var database: DatabaseConfiguration
    /// Where the listener LISTENs for new jobs and cancellations, when that is not
    /// `database`: a direct connection (or a session-mode pool) beside a
    /// transaction-mode pooler. Nil listens on `database`, or polls when that is pooled
    /// (see `ListenPlacement`).
    public var listenDatabase: DatabaseConfiguration?
    /// Queues to take jobs from, claimed round-robin. Default `["default"]`.
    public var queues: [String] = ["default"]
    /// Jobs run at once. Default 32.
    public var concurrency: Int = 32
    /// How long a lease lasts before another worker may rescue the job. Renewed at a third of it. Default 30 s.
    public var lease: Duration = .seconds(30)
    /// How long before a lease could expire a worker that cannot renew it (database out of
    /// reach) aborts the job and stops claiming. Nil (the default) is a fifth of the lease,
    /// between 200 ms and 10 s (see ``LeaseFence``).
    public var leaseFenceMargin: Duration?
    /// TCP keepalives on every worker connection, so a silent link is noticed in seconds.
    /// Values in the connection string win. Default: idle 5 s, then 3 probes 2 s apart;
    /// unacknowledged data gives up after 15 s.
    public var keepalive: DatabaseKeepalive? = DatabaseKeepalive()
    /// How long in-flight jobs may take to finish after SIGTERM/SIGINT. Default 25 s.
    public var shutdownGrace: Duration = .seconds(25)
    /// Backoff and Retry-After rules. Defaults: exponential from 1 s, capped at 1 h, full jitter; Retry-After capped at 1 h (with `JobDefaults.maxAttempts`, about 6.5 h of retries).
    public var retryPolicy = RetryPolicy(backoff: BackoffPolicy(), retryAfterCap: .seconds(3600))
    /// The circuit breaker rules shared by the fleet.
    public var breakerPolicy = BreakerPolicy()
    /// The polling fallback when no NOTIFY arrives. Default 1 s.
    public var pollInterval: Duration = .seconds(1)
    /// How long succeeded jobs stay visible to `jobctl show`. Default 24 h. Zero keeps
    /// none: a success deletes the job without archiving it in `completed_jobs`.
    public var retention: Duration = .seconds(86_400)
    /// Breaker transitions (`courier.breaker_events`) older than this are pruned. Default 7 days.
    public var breakerEventRetention: Duration = .seconds(7 * 86_400)
    /// Dead letters older than this are purged automatically; nil keeps them until purged by hand.
    public var deadLetterRetention: Duration?
    /// Destinations on loopback, private and link-local addresses are refused unless true.
    public var allowPrivateNetworks = false
    /// Where `{"secret": NAME}` header values are read from when `COURIER_SECRET_<NAME>` is not set.
    public var secretsDirectory: String?
    /// Largest response body prefix kept, in bytes. Default 64 KiB.
    public var maxResponseBytes = 65_536
    /// Most jobs claimed in one statement. Default 200: when many slots are free at once (a
    /// worker with a high `--concurrency` draining short jobs) a claim of 200 cost PostgreSQL 10%
    /// less per job than two of 100 (no-op drain, 2 workers: 66.6k against 58.6k jobs/s). A busy
    /// worker still claims once 50 slots are free (``ClaimTrigger/threshold``).
    public var claimBatch = 200
    /// Most acknowledgements written in one statement. Default 500.
    public var ackBatch = 500
    /// How long a result may wait for others to join its statement. Default 10 ms.
    ///
    /// A statement's fixed cost is most of an acknowledgement's: `courier.complete_jobs`
    /// took 0.34-0.41 ms for 30 results. With 2 ms, a worker finishing 1,000 jobs a second
    /// wrote them in about 500 statements; with 10 ms it writes about 100. In 2-worker drains
    /// at `--concurrency 64`, 10 ms against 2 ms: HTTP 35 → 111 results per statement,
    /// PostgreSQL CPU per job −17%, 1.11× jobs/s; no-op 1.15× jobs/s (bench/notes.md,
    /// "Acknowledgements"). Nothing waits on the write: the slot is free when the job ends;
    /// only the job's row shows `running` that much longer.
    public var ackFlushInterval: Duration = .milliseconds(10)
    /// `host:port` for /metrics, /healthz and /readyz; nil disables the endpoint.
    public var metricsAddress: String?
    /// The scheduler service (periodic jobs of `courier.schedules`); see ``Scheduler/Configuration``.
    public var scheduler = Scheduler.Configuration()
    /// Where jobs run. Default ``JobThreads/own`` (`jobworker` too).
    public var jobThreads: JobThreads = .own
    /// OpenTelemetry tracing of attempts; nil (the default, and whenever no OTLP endpoint is
    /// configured) builds no span at all.
    public var tracing: TracingConfiguration?

    /// Where a worker's jobs run (each job, and each resumption after its request returns).
    public enum JobThreads: Sendable, Equatable {
        /// Threads of the worker's own (as many as the cooperative pool has): jobs keep running
        /// while something else in the process blocks the pool's threads, an embedding
        /// application or a test runner's synchronous tests. A claim's jobs wake one thread,
        /// not one per job (``JobExecutor``): per no-op job this costs 17% less worker CPU
        /// than the pool, and the HTTP drain and pickup are level with it in A/Bs (bench/notes.md).
        case own
        /// Swift's cooperative pool. Every job started there may wake a pool thread of its
        /// own, which the 2-core bench box paid for in context switches (~0.6 per no-op job).
        case cooperativePool
    }

    public init(database: DatabaseConfiguration) {
        self.database = database
    }

    /// How often leases and the worker's registration are renewed.
    public var heartbeatInterval: Duration {
        max(.milliseconds(200), min(lease / 3, .seconds(10)))
    }

    /// The half-open probe lease this worker takes and renews: at least the job lease
    /// (`--lease`), so a probe never outlives its probe lease while this worker may still be
    /// sending it (``BreakerPolicy/probeLease(forJobLease:)``). Default 30 s.
    public var probeLease: Duration {
        breakerPolicy.probeLease(forJobLease: lease)
    }

    /// Checks values that flags cannot check alone; errors name the flag.
    public func validate() throws(ValidationError) {
        if queues.isEmpty { throw ValidationError(field: "--queues", message: "needs at least one queue") }
        for queue in queues { try QueueName.validate(queue, field: "--queues") }
        if !Bounds.concurrency.contains(concurrency) {
            throw ValidationError(field: "--concurrency", message: "must be between \(Bounds.concurrency.lowerBound) and \(Bounds.concurrency.upperBound)")
        }
        if lease < Bounds.minimumLease { throw ValidationError(field: "--lease", message: "must be at least \(Bounds.minimumLease.formatted)") }
        if shutdownGrace < .zero { throw ValidationError(field: "--shutdown-grace", message: "must not be negative") }
        if pollInterval < Bounds.minimumPollInterval {
            throw ValidationError(field: "--poll-interval", message: "must be at least \(Bounds.minimumPollInterval.formatted)")
        }
        try retryPolicy.validate()
        try breakerPolicy.validate()
    }
}
