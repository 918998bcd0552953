import CourierCore
import CourierStore
import CourierWorker
import Foundation

/// The per-process breaker the simulator compares against: each worker keeps its
/// own `BreakerStateMachine` (the same policy as the fleet's) and wraps the HTTP
/// handler with it, as a breaker library inside each process would.
///
/// While its breaker is open, a worker still leases the destination's jobs (the
/// queue knows nothing of the breaker) and fails them fast without sending; the
/// failure is `transport` (certainly not delivered), so the job is retried after
/// its backoff and the lease has used an attempt. When the cooldown ends, each
/// process probes on its own.
final class LocalBreakerHandler: JobHandler, @unchecked Sendable {
    private let inner: any JobHandler
    private let worker: Int
    private let recorder: SimRecorder
    private let lock = NSLock()
    private var machine: BreakerStateMachine
    private var random = SystemRandomNumberGenerator()

    init(inner: any JobHandler, policy: BreakerPolicy, worker: Int, recorder: SimRecorder) {
        self.inner = inner
        self.worker = worker
        self.recorder = recorder
        self.machine = BreakerStateMachine(policy: policy, now: Date())
    }

    private enum Route { case send, probe(Int64), reject }

    func perform(_ job: ClaimedJob) async -> Classification {
        let route = lock.withLock { () -> Route in
            if machine.admitsTraffic { return .send }
            let now = Date()
            if let probe = machine.tryAcquireProbe(now: now) {
                recorder.record(worker: worker, probe.transition)
                return .probe(probe.generation)
            }
            return .reject
        }
        switch route {
        case .reject:
            recorder.recordRejection()
            return Classification(succeeded: false, errorClass: .transport, message: "rejected by this process's open breaker",
                                  mayHaveBeenDelivered: false, retryable: true)
        case .send:
            let result = await inner.perform(job)
            guard result.succeeded || result.countsAsBreakerFailure else { return result }
            lock.withLock {
                let action = machine.record(failure: !result.succeeded, now: Date(), using: &random)
                if case .transitioned(let t) = action { recorder.record(worker: worker, t) }
            }
            return result
        case .probe(let generation):
            let result = await inner.perform(job)
            let healthy = result.succeeded || !result.countsAsBreakerFailure
            lock.withLock {
                let action = machine.recordProbe(generation: generation, succeeded: healthy, now: Date(), using: &random)
                if case .transitioned(let t) = action { recorder.record(worker: worker, t) }
            }
            return result
        }
    }
}

/// Transitions of the per-process breakers, with the worker that made them.
final class SimRecorder: @unchecked Sendable {
    struct Entry: Sendable {
        var worker: Int
        var transition: BreakerTransition
    }

    private let lock = NSLock()
    private var entries: [Entry] = []
    private var rejections = 0

    func record(worker: Int, _ transition: BreakerTransition) {
        lock.withLock { entries.append(Entry(worker: worker, transition: transition)) }
    }

    func recordRejection() { lock.withLock { rejections += 1 } }

    var all: [Entry] { lock.withLock { entries } }
    var rejectionCount: Int { lock.withLock { rejections } }
}
