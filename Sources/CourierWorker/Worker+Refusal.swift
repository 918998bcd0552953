import CourierCore
import CourierStore
import Foundation

/// Jobs this worker may not run because of its own configuration (see ``LocalRefusal``).
extension Worker {
    /// Hands `job` back without using an attempt (its refusal counted in the database),
    /// logs it and notes it in the worker's ``RefusalLedger``. Returns false when the job
    /// should instead end as a dead letter; `classification`'s message then says that no
    /// worker may run it, and why, and the normal path records it.
    func refuseHere(_ job: ClaimedJob, _ classification: inout Classification, probeGeneration: Int64?) -> Bool {
        let decision = LocalRefusal.decide(deadline: job.deadline, refusedSince: job.refusedSince, refusals: job.refusals,
                                           now: clock.now())
        metrics.recordLocalRefusal()
        let attempts = metrics.attemptsMade
        refusalLedger.withLock { $0.noteRefusal(job: job.id, message: classification.message, attemptsSoFar: attempts, at: clock.instant()) }
        if let probeGeneration {
            // The destination was not tried: the probe says nothing about it.
            acknowledge(.probeAbandon(destination: job.destination, generation: probeGeneration))
        }
        switch decision {
        case .handBack(let delay):
            acknowledge(.refuse(id: job.id, lease: job.lease, milliseconds: Int64(delay.milliseconds), reason: classification.message))
            logger.error("this worker's configuration cannot run the job; handed back for another worker, no attempt used", [
                ("job", job.id), ("kind", job.kind), ("destination", job.destination),
                ("error", classification.message), ("retry_in", DurationParser.format(delay)), ("refusals", job.refusals + 1),
            ])
            return true
        case .giveUp(let why):
            logger.error("this worker's configuration cannot run the job, and no worker did in time", [
                ("job", job.id), ("destination", job.destination), ("error", classification.message), ("reason", why),
            ])
            classification.message = "no worker may run it (\(why)): \(classification.message)"
            return false
        }
    }

    /// Why the worker reports degraded (`courier_worker_degraded` 1), or nil: it refused many
    /// jobs, or most of its claims, within ``RefusalLedger/window`` (one job's refusals never
    /// make it degraded). Degraded is not unready: `/readyz` does not look at it.
    public var degradedReason: String? {
        let attempts = metrics.attemptsMade
        return refusalLedger.withLock { $0.degradedReason(attemptsSoFar: attempts, at: clock.instant()) }
    }
}
