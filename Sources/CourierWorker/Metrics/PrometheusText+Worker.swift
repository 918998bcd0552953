import CourierCore
import CourierHTTPServer
import Foundation

extension PrometheusText {
    /// What `/metrics` needs to know about the worker besides its counters.
    public struct WorkerState: Sendable {
        public var workerID: String
        public var version: String
        public var concurrency: Int
        public var inFlight: Int
        public var stopping: Bool
        public var databaseReachable: Bool
        /// Migrations the worker needs that the database has not applied.
        public var missingMigrations: [String]
        /// Set while the worker recently refused a job because of its own configuration.
        public var degradedReason: String?
        /// The queues this worker serves: their per-queue counters read 0 before any attempt.
        public var queues: [String]

        public init(workerID: String, version: String, concurrency: Int, inFlight: Int, stopping: Bool, databaseReachable: Bool,
                    missingMigrations: [String] = [], degradedReason: String? = nil, queues: [String] = []) {
            self.queues = queues
            self.degradedReason = degradedReason
            self.workerID = workerID
            self.version = version
            self.concurrency = concurrency
            self.inFlight = inFlight
            self.stopping = stopping
            self.databaseReachable = databaseReachable
            self.missingMigrations = missingMigrations
        }

        /// What `/readyz` reports.
        /// Whether the worker can serve: a degraded worker still can (``degradedReason``).
        public var ready: Bool { databaseReachable && !stopping && missingMigrations.isEmpty }
    }

    /// The `/metrics` page of a worker. Pure: the same values give the same page.
    ///
    /// Families whose name starts `courier_` and that describe this process are
    /// counted here; the fleet-wide ones (queue depth, breakers, pending dead letters,
    /// live workers) come from the last database sample and are the same on every
    /// worker, so aggregate them with `max`, not `sum`.
    public static func workerPage(metrics m: WorkerMetrics.Snapshot, state: WorkerState,
                                  sampling: MetricsServerSampler.Status, now: Date = Date()) -> String {
        var page = PrometheusText()
        page.family("courier_worker_info", .gauge, help: "Always 1; labels identify the worker process.",
                    [Sample("courier_worker_info", [("worker", state.workerID), ("version", state.version)], 1)])
        page.single("courier_worker_concurrency", .gauge, help: "Jobs this worker may run at once.", Double(state.concurrency))
        page.single("courier_jobs_in_flight", .gauge, help: "Jobs this worker holds right now.", Double(state.inFlight))
        page.single("courier_worker_stopping", .gauge, help: "1 while a graceful shutdown is under way.", state.stopping ? 1 : 0)
        page.single("courier_schema_missing_migrations", .gauge,
                    help: "Migrations this worker needs that the database lacks; it claims nothing while above 0.",
                    Double(state.missingMigrations.count))
        page.single("courier_database_reachable", .gauge, help: "1 when the database answered the last time the worker asked.",
                    state.databaseReachable ? 1 : 0)
        page.single("courier_worker_degraded", .gauge,
                    help: "1 while this worker refused many jobs, or most of its claims, in the last 5 minutes because its own configuration cannot run them (private address, secret, handler). Not readiness.",
                    state.degradedReason == nil ? 0 : 1)
        page.single("courier_jobs_refused_by_configuration_total", .counter,
                    help: "Jobs this worker handed back, without using an attempt, because its configuration cannot run them.",
                    Double(m.refusedByConfiguration))
        page.single("courier_lease_fence_aborts_total", .counter,
                    help: "Jobs this worker aborted because it could not prove their leases in time (database out of reach).",
                    Double(m.fenceAborts))
        page.single("courier_jobs_withheld_total", .counter,
                    help: "Jobs this worker handed back unsent, without using an attempt, because their destination was held back after the claim.",
                    Double(m.withheld))
        page.single("courier_spans_exported_total", .counter,
                    help: "Attempt spans this worker exported to its OTLP collector (0 without tracing).", Double(m.spansExported))
        page.single("courier_spans_dropped_total", .counter,
                    help: "Attempt spans this worker dropped: its export queue was full or the collector did not take them.",
                    Double(m.spansDropped))
        page.single("courier_worker_ready", .gauge, help: "1 when /readyz answers 200.", state.ready ? 1 : 0)

        // Per queue, so one queue's failure rate can be alerted on; every queue this worker
        // serves or has run reads 0 for every result before its first.
        let queues = Set(state.queues).union(m.attemptsByQueue.keys).union(m.outcomesByQueue.keys).sorted()
        let results = ["success"] + ErrorClass.allCases.map(\.rawValue)
        page.family("courier_attempts_total", .counter,
                    help: "Attempts this worker made, by queue and result: success or the error class.",
                    queues.flatMap { queue in
                        let counts = m.attemptsByQueue[queue] ?? [:]
                        let names = Set(results).union(counts.keys).sorted()
                        return names.map { Sample("courier_attempts_total", [("queue", queue), ("class", $0)], Double(counts[$0] ?? 0)) }
                    })
        page.family("courier_job_outcomes_total", .counter,
                    help: "Decisions after this worker's attempts, by queue: succeeded, retried or dead_lettered.",
                    queues.flatMap { queue in
                        ["succeeded", "retried", "dead_lettered"].map {
                            Sample("courier_job_outcomes_total", [("queue", queue), ("outcome", $0)],
                                   Double(m.outcomesByQueue[queue]?[$0] ?? 0))
                        }
                    })
        page.family("courier_request_duration_seconds", .histogram,
                    help: "How long this worker's requests took, by queue, from sending to the end of the answer or the failure.",
                    queues.flatMap { queue in
                        let histogram = m.requestDurations[queue] ?? WorkerMetrics.Histogram(bounds: WorkerMetrics.requestDurationBounds)
                        return histogramSamples("courier_request_duration_seconds", labels: [("queue", queue)],
                                                buckets: histogram.cumulative, sum: histogram.sum, count: histogram.count)
                    })
        page.single("courier_jobs_succeeded_after_retry_total", .counter,
                    help: "Jobs that succeeded on a later attempt than the first.", Double(m.succeededAfterRetry))
        var reasons = m.deadLettersByReason
        for reason in DeadLetterReason.allCases where reasons[reason.rawValue] == nil { reasons[reason.rawValue] = 0 }
        page.family("courier_dead_letters_total", .counter, help: "Jobs this worker moved to the dead letters, by reason.",
                    reasons.keys.sorted().map { Sample("courier_dead_letters_total", [("reason", $0)], Double(reasons[$0]!)) })
        page.family("courier_retry_delay_seconds", .histogram, help: "Delays before the retries this worker scheduled.",
                    histogramSamples("courier_retry_delay_seconds", buckets: m.retryDelays.cumulative,
                                     sum: m.retryDelays.sum, count: m.retryDelays.count))
        // Per fairness key, bounded as destinations are: the top keys by jobs claimed keep their own label.
        let keys = LabelSelection(ranking: m.claimedByFairnessKey.mapValues(Double.init), limit: fairnessKeyLimit)
        page.family("courier_fairness_key_claimed_total", .counter,
                    help: "Jobs this worker claimed through the fair claim, per fairness key ((default) for jobs without one; the top keys, the rest as other).",
                    keys.fold(m.claimedByFairnessKey.mapValues(Double.init)).map {
                        Sample("courier_fairness_key_claimed_total", [("fairness_key", $0.label)], $0.value)
                    })
        page.family("courier_claim_batch_size", .histogram, help: "Jobs per non-empty claim statement.",
                    histogramSamples("courier_claim_batch_size", buckets: m.claimBatchSizes.cumulative,
                                     sum: m.claimBatchSizes.sum, count: m.claimBatchSizes.count))
        page.family("courier_ack_latency_seconds", .histogram,
                    help: "Time to write one batch of results (success, retry, dead letter) to the database.",
                    histogramSamples("courier_ack_latency_seconds", buckets: m.ackLatency.cumulative,
                                     sum: m.ackLatency.sum, count: m.ackLatency.count))
        page.single("courier_acked_jobs_total", .counter, help: "Results written to the database.", Double(m.ackedJobs))
        page.family("courier_lease_renewal_seconds", .histogram,
                    help: "How long each answered lease renewal took, from sending to the answer (a renewal gives up after the heartbeat interval). Size --lease from its tail: a worker that cannot renew for --lease less its fence margin aborts its requests.",
                    histogramSamples("courier_lease_renewal_seconds", buckets: m.leaseRenewals.cumulative,
                                     sum: m.leaseRenewals.sum, count: m.leaseRenewals.count))
        page.family("courier_lease_rescues_total", .counter,
                    help: "Jobs whose lease expired and that this worker rescued: requeued or dead_lettered.", [
                        Sample("courier_lease_rescues_total", [("result", "requeued")], Double(m.rescuedRequeued)),
                        Sample("courier_lease_rescues_total", [("result", "dead_lettered")], Double(m.rescuedDeadLettered)),
                    ])
        page.single("courier_acknowledgements_dropped_total", .counter,
                    help: "Results the database refused even one at a time; their jobs are rescued when the lease expires.",
                    Double(m.droppedAcknowledgements))
        page.single("courier_schedule_runs_enqueued_total", .counter, help: "Schedule runs this worker enqueued.",
                    Double(m.scheduleLags.count))
        page.single("courier_schedule_runs_missed_total", .counter,
                    help: "Schedule slots this worker did not run: missed while no worker ran (by the missed-run policy) or past their deadline.",
                    Double(m.scheduleMissed))
        page.family("courier_schedule_lag_seconds", .histogram, help: "Time from a schedule run's slot to its enqueue.",
                    histogramSamples("courier_schedule_lag_seconds", buckets: m.scheduleLags.cumulative,
                                     sum: m.scheduleLags.sum, count: m.scheduleLags.count))
        // Fleet-wide figures are exported by one worker only (the live worker with the
        // smallest id), so a sum over workers counts each once.
        let reporter = sampling.latest?.fleetReporter
        let reports = MetricsServerSampler.exportsFleet(reporter: reporter, workerID: state.workerID.lowercased())
        page.single("courier_fleet_reporter", .gauge,
                    help: "1 on the one worker that exports the fleet-wide (Sampled) families; the others export them without samples.",
                    sampling.latest != nil && reports ? 1 : 0)
        fleetFamilies(&page, sampling: sampling, now: now, reports: reports)
        return page.text
    }

    /// The families read from the last database sample; empty (HELP and TYPE only) before
    /// the first, and on every worker but the fleet reporter.
    private static func fleetFamilies(_ page: inout PrometheusText, sampling: MetricsServerSampler.Status, now: Date, reports: Bool) {
        let sample = reports ? sampling.latest : nil
        page.family("courier_queue_depth", .gauge, help: "Jobs per queue and state (available, running), fleet-wide. Sampled.",
                    sample?.queueDepths.map {
                        Sample("courier_queue_depth", [("queue", $0.queue), ("state", $0.state)], Double($0.count))
                    } ?? [])
        page.family("courier_queue_oldest_due_seconds", .gauge,
                    help: "How long the oldest runnable job of each queue has been due. Sampled.",
                    sample?.queueDepths.compactMap { depth in
                        depth.oldestDueSeconds.map { Sample("courier_queue_oldest_due_seconds", [("queue", depth.queue)], $0) }
                    } ?? [])
        var breakerStates = sample?.breakerStates ?? [:]
        if sample != nil {
            for state in ["closed", "open", "half_open"] where breakerStates[state] == nil { breakerStates[state] = 0 }
        }
        page.family("courier_breakers", .gauge, help: "Circuit breakers per state, fleet-wide (destinations without a row are closed). Sampled.",
                    breakerStates.keys.sorted().map { Sample("courier_breakers", [("state", $0)], Double(breakerStates[$0]!)) })
        page.family("courier_breaker_state_seconds", .gauge,
                    help: "How long each breaker that is not closed has been in its state (open or half_open). Sampled.",
                    sample?.openBreakers.map {
                        Sample("courier_breaker_state_seconds", [("destination", $0.destination), ("state", $0.state)], $0.seconds)
                    } ?? [])
        page.family("courier_breaker_transitions_total", .counter,
                    help: "Breaker transitions, fleet-wide (courier.breaker_transition_totals; pruning events does not lower it). Sampled.",
                    sample?.breakerTransitions.map {
                        Sample("courier_breaker_transitions_total", [("from", $0.from), ("to", $0.to)], Double($0.count))
                    } ?? [])
        var pending = sample?.deadLetters ?? [:]
        if sample != nil {
            for reason in DeadLetterReason.allCases where pending[reason.rawValue] == nil { pending[reason.rawValue] = 0 }
        }
        page.family("courier_dead_letters_pending", .gauge, help: "Dead letters not yet replayed, by reason, fleet-wide. Sampled.",
                    pending.keys.sorted().map { Sample("courier_dead_letters_pending", [("reason", $0)], Double(pending[$0]!)) })
        page.family("courier_live_workers", .gauge, help: "Workers with a recent heartbeat that are not shutting down. Sampled.",
                    sample.map { [Sample("courier_live_workers", [], Double($0.liveWorkers))] } ?? [])
        page.family("courier_metrics_sample_age_seconds", .gauge, help: "Age of the database sample behind the Sampled families.",
                    sample.map { [Sample("courier_metrics_sample_age_seconds", [], max(0, now.timeIntervalSince($0.takenAt)))] } ?? [])
        page.single("courier_metrics_sample_failures_total", .counter, help: "Database samples that failed.",
                    Double(sampling.failures))
    }
}
