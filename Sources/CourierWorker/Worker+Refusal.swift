import CourierCore
import CourierStore
import Foundation

/// Jobs this worker may not run because of its own configuration (see ``LocalRefusal``).
extension Worker {
    /// Hands `job` back without using an attempt, counts and logs it, and marks the worker
    /// degraded. Returns false when the job should instead end as a dead letter (the
    /// classification's message then says why), which the normal path records.
    func refuseHere(_ job: ClaimedJob, _ classification: Classification, probeGeneration: Int64?) -> Bool {
        let decision = LocalRefusal.decide(deadline: job.deadline, createdAt: job.createdAt, now: clock.now())
        metrics.recordLocalRefusal()
        lastLocalRefusal.withLock { $0 = (clock.instant(), classification.message) }
        if let probeGeneration {
            // The destination was not tried: the probe says nothing about it.
            acknowledge(.probeAbandon(destination: job.destination, generation: probeGeneration))
        }
        switch decision {
        case .handBack(let delay):
            acknowledge(.handBackLater(id: job.id, lease: job.lease, milliseconds: Int64(delay.milliseconds)))
            logger.error("this worker's configuration cannot run the job; handed back for another worker, no attempt used", [
                ("job", job.id), ("kind", job.kind), ("destination", job.destination),
                ("error", classification.message), ("retry_in", DurationParser.format(delay)),
            ])
            return true
        case .giveUp(let why):
            logger.error("this worker's configuration cannot run the job, and no worker did in time", [
                ("job", job.id), ("destination", job.destination), ("error", classification.message), ("reason", why),
            ])
            return false
        }
    }

    /// Why the worker reports degraded (`/readyz` 503, `courier_worker_degraded` 1): it
    /// refused a job because of its configuration within ``LocalRefusal/degradedFor``.
    public var degradedReason: String? {
        let now = clock.instant()
        return lastLocalRefusal.withLock { last in
            guard let last, now - last.at < LocalRefusal.degradedFor else { return nil }
            return last.message
        }
    }
}
