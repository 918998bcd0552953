import CourierCore
import CourierStore
import Foundation
import Postgres

/// Running one job and turning its outcome into one decision.
extension Worker {
    /// Marks a job started, unless shutdown began first (then it goes back unstarted).
    func begin(_ id: Int64) -> Bool {
        lock.withLock {
            guard !stopping, inFlight[id] != nil else { return false }
            inFlight[id]?.started = true
            return true
        }
    }

    func execute(_ job: ClaimedJob) async {
        guard begin(job.id) else {
            acknowledge(.handBack(id: job.id, attempt: job.attempt))
            finish(job.id)
            return
        }
        let startedAt = Date()
        let clock = ContinuousClock.now
        var classification: Classification
        if let deadline = job.deadline, deadline <= startedAt {
            classification = Classification(succeeded: false, errorClass: nil, message: "the deadline passed before the attempt",
                                            mayHaveBeenDelivered: false, retryable: false)
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, reason: DeadLetterReason.deadline.rawValue,
                                          errorJSON: nil, lastClass: nil, lastStatus: nil)))
            metrics.recordDeadLetter(reason: .deadline)
            logJob(job, "job dead-lettered", classification, [("reason", "deadline")])
            finish(job.id)
            return
        } else if job.cancelRequested {
            classification = Classification(succeeded: false, errorClass: .cancelled, message: "cancelled by an operator",
                                            mayHaveBeenDelivered: false, retryable: false)
        } else if let handler = lock.withLock({ handlers[job.kind] }) {
            classification = await handler.perform(job)
        } else {
            var missing = Classification(succeeded: false, errorClass: .client,
                                         message: "this worker has no handler for job kind '\(job.kind)'",
                                         mayHaveBeenDelivered: false, retryable: false)
            missing.refusedByConfiguration = true
            classification = missing
        }
        let elapsed = ContinuousClock.now - clock
        let flags = lock.withLock { inFlight[job.id].map { ($0.cancelledByOperator, $0.abortedByShutdown, $0.probeGeneration) } }
            ?? (false, false, nil)
        if classification.refusedByConfiguration, !flags.0, !flags.1 {
            if refuseHere(job, classification, probeGeneration: flags.2) {
                finish(job.id)
                return
            }
            classification.refusedByConfiguration = false
        }
        if let generation = flags.2 {
            if flags.0 || flags.1 || classification.errorClass == .cancelled {
                // Cancelled or aborted at shutdown: the probe says nothing about the destination.
                acknowledge(.probeAbandon(destination: job.destination, generation: generation))
            } else {
                // The verdict: the destination answered in a way that is not a breaker failure.
                let healthy = classification.succeeded
                    || (!classification.countsAsBreakerFailure && classification.errorClass != .throttled)
                acknowledge(.probeResult(destination: job.destination, generation: generation, succeeded: healthy))
            }
        } else if !flags.0 && !flags.1 {
            noteEvidence(job.destination, classification)
        }
        record(job, classification, startedAt: startedAt, elapsed: elapsed,
               cancelledByOperator: flags.0, abortedByShutdown: flags.1)
        finish(job.id)
    }

    func finish(_ id: Int64) {
        lock.withLock { _ = inFlight.removeValue(forKey: id) }
        claimSignal.signal()
    }

    func acknowledge(_ item: Acknowledgement) {
        acknowledgements.append(item)
        ackSignal.signal()
    }

    /// Turns one attempt's classification into its decision and queues the write.
    func record(_ job: ClaimedJob, _ classification: Classification, startedAt: Date, elapsed: Duration,
                        cancelledByOperator: Bool, abortedByShutdown: Bool) {
        let durationMs = Int(elapsed.milliseconds)
        metrics.recordAttempt(classification)
        let statsKey = AttemptStatsTable.Key(queue: job.queue, destination: job.destination,
                                             errorClass: classification.succeeded ? "success" : (classification.errorClass?.rawValue ?? "unknown"))
        lock.withLock {
            attemptCounts[statsKey, default: .init()].attempts += 1
            if classification.succeeded && job.attempt > 1 { attemptCounts[statsKey, default: .init()].succeededAfterRetry += 1 }
        }
        if classification.succeeded {
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, status: classification.status, durationMilliseconds: durationMs)))
            metrics.recordSuccess(afterRetry: job.attempt > 1)
            if logger.isEnabled(.debug) { logJob(job, "job succeeded", classification, [("duration_ms", durationMs)]) }
            return
        }
        let facts = JobRetryFacts(method: job.method, hasIdempotencyKey: job.idempotencyKey != nil, attempt: job.attempt,
                                  maxAttempts: job.maxAttempts, deadline: job.deadline,
                                  previousDelay: job.lastDelayMilliseconds.map { .milliseconds($0) })
        var effective = classification
        let decision: JobDecision
        if cancelledByOperator {
            effective.errorClass = .cancelled
            effective.message = "cancelled by an operator while running: " + classification.message
            decision = .deadLetter(.cancelled)
        } else if abortedByShutdown {
            // The request was aborted mid-flight: it may have been delivered.
            effective.errorClass = .cancelled
            effective.message = "aborted at shutdown after the grace period; the request may have been sent"
            if !facts.isSafeToRepeat {
                decision = .deadLetter(.ambiguous)
            } else if job.attempt >= job.maxAttempts {
                decision = .deadLetter(.exhausted)
            } else {
                decision = .retry(at: Date(), delay: .zero, destinationNotBefore: nil)
            }
        } else {
            decision = lock.withLock {
                RetryDecider.decide(classification, job: facts, policy: queuePolicies.policy(for: job.queue), now: Date(), rng: &random)
            }
        }
        let error = attemptJSON(job, effective, startedAt: startedAt, durationMs: durationMs)
        switch decision {
        case .succeed:
            acknowledge(.success(.init(id: job.id, attempt: job.attempt, status: classification.status, durationMilliseconds: durationMs)))
        case .retry(_, let delay, let notBefore):
            if let notBefore {
                let pause = max(Int64(0), Int64(notBefore.timeIntervalSinceNow * 1000))
                acknowledge(.destinationPause(destination: job.destination, milliseconds: pause))
            }
            acknowledge(.retry(.init(id: job.id, attempt: job.attempt, delayMilliseconds: Int64(delay.milliseconds), errorJSON: error)))
            metrics.recordRetry(delay: delay)
            lock.withLock {
                attemptCounts[statsKey, default: .init()].addRetry(delayMilliseconds: Int64(delay.milliseconds))
                let due = ContinuousClock.now + delay
                nextRetryDue = nextRetryDue.map { min($0, due) } ?? due
            }
            logJob(job, "attempt failed; retrying", effective, [("retry_in", DurationParser.format(delay))])
        case .deadLetter(let reason):
            acknowledge(.deadLetter(.init(id: job.id, attempt: job.attempt, reason: reason.rawValue, errorJSON: error,
                                          lastClass: effective.errorClass?.rawValue, lastStatus: effective.status)))
            metrics.recordDeadLetter(reason: reason)
            logJob(job, "job dead-lettered", effective, [("reason", reason.rawValue)])
        }
    }

    func attemptJSON(_ job: ClaimedJob, _ c: Classification, startedAt: Date, durationMs: Int) -> String {
        var object: [String: Any] = [
            "attempt": job.attempt,
            "class": c.errorClass?.rawValue ?? "unknown",
            "message": c.message,
            "started_at": Timestamp.format(startedAt),
            "duration_ms": durationMs,
            "worker": id.uuidString.lowercased(),
        ]
        if let status = c.status { object["status"] = status }
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
