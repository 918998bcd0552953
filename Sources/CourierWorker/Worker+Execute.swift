import CourierCore
import CourierStore
import Foundation

/// Running one job and turning its outcome into one decision.
extension Worker {
    typealias Lease = WorkerStateMachine.Lease

    /// Runs one job in the jobs' task group and queues the write of its result.
    ///
    /// Only the handler's call is asynchronous; what comes before and after it runs in
    /// synchronous functions kept out of line. A job's task keeps its async frame for as long
    /// as the request takes, and with the whole attempt inlined here that frame was a 4 KB
    /// allocation per job (bench/notes.md, "Allocations of 1 KB or more per HTTP job").
    func execute(_ lease: Lease) async {
        switch beginAttempt(lease) {
        case .over:
            return
        case .decided(let attempt, let classification):
            endAttempt(attempt, classification)
        case .send(let attempt, let handler):
            let classification = await handler.perform(attempt.job)
            endAttempt(attempt, classification)
        }
    }

    /// What an attempt carries from its start to its end.
    final class Attempt: Sendable {
        let lease: Lease
        let job: ClaimedJob
        let marksAtStart: WorkerStateMachine.Marks
        let startedAt: Date
        let began: ContinuousClock.Instant
        /// The attempt's span, when the worker traces (nil otherwise: nothing is built).
        let trace: AttemptSpans.Started?

        init(lease: Lease, job: ClaimedJob, marksAtStart: WorkerStateMachine.Marks, startedAt: Date, began: ContinuousClock.Instant,
             trace: AttemptSpans.Started? = nil) {
            self.lease = lease
            self.job = job
            self.marksAtStart = marksAtStart
            self.startedAt = startedAt
            self.began = began
            self.trace = trace
        }
    }

    /// How an attempt goes on once started.
    enum AttemptStart {
        /// Nothing to send: the job was not started, or it ended already (handed back, dead-lettered).
        case over
        /// Its outcome is known without sending (cancelled before it ran, no handler for its kind).
        case decided(Attempt, Classification)
        /// The handler sends it.
        case send(Attempt, any JobHandler)
    }

    /// Starts an attempt: marks the job started, and settles at once what needs no request.
    @inline(never)
    func beginAttempt(_ lease: Lease) -> AttemptStart {
        let start = withState { $0.starting(lease) }
        guard var job = start.job, let marksAtStart = start.marks else { return .over }
        job.isProbe = marksAtStart.probeGeneration != nil
        switch start.action {
        case .ignore:
            return .over
        case .handBack:
            // Shutdown began before the job started: back to the queue without using an attempt.
            acknowledge(.handBack(id: job.id, lease: job.lease))
            if let generation = marksAtStart.probeGeneration {
                acknowledge(.probeAbandon(destination: job.destination, generation: generation))
            }
            finish(lease)
            return .over
        case .run:
            break
        }
        let startedAt = clock.now()
        if let deadline = job.deadline, deadline <= startedAt {
            let classification = Classification(succeeded: false, errorClass: nil, message: "the deadline passed before the attempt",
                                                mayHaveBeenDelivered: false, retryable: false)
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, lease: job.lease, reason: .deadline,
                                          errorJSON: nil, lastClass: nil, lastStatus: nil)))
            if let generation = marksAtStart.probeGeneration {
                // Nothing was sent: the probe says nothing about the destination.
                acknowledge(.probeAbandon(destination: job.destination, generation: generation))
            }
            metrics.recordDeadLetter(reason: .deadline, queue: job.queue)
            logJob(job, "job dead-lettered", classification, [("reason", "deadline")])
            finish(lease)
            return .over
        }
        let trace = tracer?.start(job, now: startedAt)
        if job.kind == "http", propagation.propagates(job.destination) {
            // The attempt's span is the next hop's parent; without tracing the enqueuing context goes on as it is.
            if let trace {
                job.outboundTraceparent = trace.context.traceparent
                job.outboundTracestate = job.tracestate
            } else if let traceparent = job.traceparent {
                job.outboundTraceparent = traceparent
                job.outboundTracestate = job.tracestate
            }
        }
        let attempt = Attempt(lease: lease, job: job, marksAtStart: marksAtStart, startedAt: startedAt, began: clock.instant(),
                              trace: trace)
        if job.cancelRequested {
            return .decided(attempt, Classification(succeeded: false, errorClass: .cancelled, message: "cancelled by an operator",
                                                    mayHaveBeenDelivered: false, retryable: false))
        }
        guard let handler = handler(for: job.kind) else {
            var missing = Classification(succeeded: false, errorClass: .client,
                                         message: "this worker has no handler for job kind '\(job.kind)'",
                                         mayHaveBeenDelivered: false, retryable: false)
            missing.refusedByConfiguration = true
            return .decided(attempt, missing)
        }
        return .send(attempt, handler)
    }

    /// Ends an attempt: turns its classification into one decision and frees its slot.
    @inline(never)
    func endAttempt(_ attempt: Attempt, _ outcome: Classification) {
        var classification = outcome
        let (job, lease, marksAtStart) = (attempt.job, attempt.lease, attempt.marksAtStart)
        let elapsed = clock.instant() - attempt.began
        let ended = withState { $0.marks(of: lease) } ?? marksAtStart
        // A job aborted by the lease fence is recorded like one aborted at shutdown (the
        // request may have been sent); the write is fenced, so it lands only if the lease
        // is still this worker's when the database answers again.
        let abortedByFence = ended.abortedByFence
        let (cancelledByOperator, abortedByShutdown) = (ended.cancelledByOperator, ended.abortedByShutdown || abortedByFence)
        if classification.withheld, !cancelledByOperator {
            // Its destination was held back after the claim, and nothing was sent: back to the
            // queue without using an attempt (the claim passes it over until the destination is free).
            acknowledge(.handBack(id: job.id, lease: job.lease))
            metrics.recordWithheld()
            if logger.isEnabled(.debug) { logJob(job, "job withheld: its destination is held back", classification, []) }
            if let trace = attempt.trace {
                tracer?.finish(trace, job: job, classification: classification,
                               end: .handedBack(reason: "the destination is held back (breaker or pause): no attempt used"), now: clock.now())
            }
            finish(lease)
            return
        }
        if classification.refusedByConfiguration, !cancelledByOperator, !abortedByShutdown {
            if refuseHere(job, &classification, probeGeneration: ended.probeGeneration) {
                if let trace = attempt.trace {
                    tracer?.finish(trace, job: job, classification: classification,
                                   end: .handedBack(reason: "refused by this worker's configuration: no attempt used"), now: clock.now())
                }
                finish(lease)
                return
            }
            classification.refusedByConfiguration = false
        }
        // Whether the attempt says anything about the destination: not a timeout the job's own
        // too-short timeout caused (BreakerPolicy.isEvidence).
        let isEvidence = configuration.breakerPolicy.isEvidence(classification, jobTimeout: .milliseconds(job.timeoutMilliseconds))
        if let generation = ended.probeGeneration {
            if cancelledByOperator || abortedByShutdown || classification.errorClass == .cancelled || classification.isLocalRefusal
                || (classification.countsAsBreakerFailure && !isEvidence) {
                // Cancelled, aborted at shutdown, refused before sending or timed out within a too-short job
                // timeout: the probe says nothing about the destination.
                acknowledge(.probeAbandon(destination: job.destination, generation: generation))
            } else {
                // The verdict: the destination answered in a way that is not a breaker failure.
                let healthy = classification.succeeded
                    || (!classification.countsAsBreakerFailure && classification.errorClass != .throttled)
                acknowledge(.probeResult(destination: job.destination, generation: generation, succeeded: healthy))
            }
        } else if !cancelledByOperator && !abortedByShutdown && isEvidence {
            breakerReporter.note(job.destination, classification)
        }
        record(job, classification, startedAt: attempt.startedAt, elapsed: elapsed,
               cancelledByOperator: cancelledByOperator, abortedByShutdown: abortedByShutdown, abortedByFence: abortedByFence,
               trace: attempt.trace)
        finish(lease)
    }

    /// The job's task is done with it: the slot is free.
    func finish(_ lease: Lease) {
        let trigger = claimer.configuration.trigger
        let (actions, running, wakeClaimer) = withState { state -> ([WorkerStateMachine.Action], Bool, Bool) in
            let actions = state.finished(lease).actions
            return (actions, state.isRunning, trigger.wakeAfterFinish(free: state.freeSlots, held: state.jobs.count))
        }
        perform(actions)
        // The supervisor waits on finished jobs only while shutting down.
        if !running { stateChanged.signal() }
        // Not once per job: only when the free slots make a claim worthwhile (see ClaimTrigger).
        if wakeClaimer { wakes.slotsFreed() }
    }

    func acknowledge(_ item: Acknowledgement) {
        completer.append(item)
    }

    /// Turns one attempt's classification into its decision and queues the write.
    func record(_ job: ClaimedJob, _ classification: Classification, startedAt: Date, elapsed: Duration,
                        cancelledByOperator: Bool, abortedByShutdown: Bool, abortedByFence: Bool = false,
                        trace: AttemptSpans.Started? = nil) {
        let durationMs = Int(elapsed.milliseconds)
        metrics.recordAttempt(classification, queue: job.queue, duration: elapsed)
        let statsKey = AttemptStatsTable.Key(queue: job.queue, destination: job.destination,
                                             errorClass: classification.succeeded ? "success" : (classification.errorClass?.rawValue ?? "unknown"))
        statsFlusher.recordAttempt(statsKey, succeededAfterRetry: classification.succeeded && job.attempt > 1)
        if classification.succeeded {
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, lease: job.lease, status: classification.status,
                                       durationMilliseconds: durationMs)))
            metrics.recordSuccess(afterRetry: job.attempt > 1, queue: job.queue)
            if logger.isEnabled(.debug) { logJob(job, "job succeeded", classification, [("duration_ms", durationMs)]) }
            if let trace { tracer?.finish(trace, job: job, classification: classification, end: .succeeded, now: clock.now()) }
            return
        }
        let facts = JobRetryFacts(method: job.method, hasIdempotencyKey: job.idempotencyKey != nil, attempt: job.attempt,
                                  maxAttempts: job.maxAttempts, deadline: job.deadline,
                                  previousDelay: job.lastDelayMilliseconds.map { .milliseconds($0) })
        var effective = classification
        let interruption: RetryDecider.Interruption?
        if cancelledByOperator {
            interruption = .cancelledByOperator
            effective.errorClass = .cancelled
            effective.message = "cancelled by an operator while running: " + classification.message
        } else if abortedByShutdown {
            interruption = .abortedAtShutdown
            // The request was aborted mid-flight: it may have been delivered.
            effective.errorClass = .cancelled
            effective.message = abortedByFence
                ? "aborted: this worker could not prove its lease in time (database out of reach); the request may have been sent"
                : "aborted at shutdown after the grace period; the request may have been sent"
        } else {
            interruption = nil
        }
        let policy = settings.policy(for: job.queue)
        let now = clock.now()
        let decision = withRandom {
            RetryDecider.decide(classification, job: facts, policy: policy, now: now, interruption: interruption, rng: &$0)
        }
        let error = attemptJSON(job, effective, startedAt: startedAt, durationMs: durationMs, trace: trace?.context)
        var end = AttemptSpans.End.succeeded
        defer {
            if let trace { tracer?.finish(trace, job: job, classification: effective, end: end, now: clock.now()) }
        }
        switch decision {
        case .succeed:
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, lease: job.lease, status: classification.status,
                                       durationMilliseconds: durationMs)))
        case .retry(_, let delay, let notBefore):
            var paused: Duration?
            if let notBefore {
                let pause = max(Int64(0), Int64(notBefore.timeIntervalSince(clock.now()) * 1000))
                acknowledge(.destinationPause(destination: job.destination, milliseconds: pause))
                paused = .milliseconds(pause)
            }
            end = .retry(delay: delay, destinationPause: paused)
            acknowledge(.retry(.init(id: job.id, attempt: job.attempt, lease: job.lease, delayMilliseconds: Int64(delay.milliseconds), errorJSON: error,
                                     usesAttempt: interruption != nil || RetryDecider.usesAttempt(classification, job: facts))))
            metrics.recordRetry(delay: delay, queue: job.queue)
            statsFlusher.recordRetry(statsKey, delayMilliseconds: Int64(delay.milliseconds))
            claimer.noteRetry(due: clock.instant() + delay)
            logJob(job, "attempt failed; retrying", effective, [("retry_in", DurationParser.format(delay))])
        case .deadLetter(let reason):
            end = .deadLettered(reason)
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, lease: job.lease, reason: reason, errorJSON: error,
                                          lastClass: effective.errorClass, lastStatus: effective.status)))
            metrics.recordDeadLetter(reason: reason, queue: job.queue)
            logJob(job, "job dead-lettered", effective, [("reason", reason.rawValue)])
        }
    }

    /// The attempt's entry in the job's `errors`; with tracing, `traceparent` is the attempt
    /// span's context, which the next attempt's span links to (``AttemptSpans``).
    func attemptJSON(_ job: ClaimedJob, _ c: Classification, startedAt: Date, durationMs: Int, trace: TraceContext? = nil) -> String {
        var object: [String: Any] = [
            "attempt": job.attempt,
            "class": c.errorClass?.rawValue ?? "unknown",
            "message": c.message,
            "started_at": Timestamp.format(startedAt),
            "duration_ms": durationMs,
            "worker": id.uuidString.lowercased(),
        ]
        if let status = c.status { object["status"] = status }
        if let trace { object["traceparent"] = trace.traceparent }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    func logJob(_ job: ClaimedJob, _ message: String, _ c: Classification, _ extra: [(String, any Sendable)] = []) {
        var fields: [(String, any Sendable)] = [
            ("job", job.id), ("queue", job.queue), ("destination", job.destination), ("attempt", job.attempt),
            ("class", c.errorClass?.rawValue ?? "none"),
        ]
        if let status = c.status { fields.append(("status", status)) }
        fields.append(("detail", c.message))
        fields += extra
        logger.log(c.succeeded ? .debug : .info, message, fields)
    }
}
