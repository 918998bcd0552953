import CourierCore
import CourierStore
import Foundation
import Postgres

/// The acknowledging thread: writes decided outcomes in batches, fenced by the lease.
extension Worker {
    func acknowledgeLoop() {
        let session = makeSession()
        defer { session.close() }
        while true {
            ackSignal.wait(timeout: .milliseconds(100))
            let done = lock.withLock { stopping && inFlight.isEmpty }
            if acknowledgements.count > 0 && acknowledgements.count < configuration.ackBatch && !done {
                // Give a batch a moment to fill: one statement for many jobs.
                Thread.sleep(forTimeInterval: Double(configuration.ackFlushInterval.milliseconds) / 1000)
            }
            while acknowledgements.count > 0 {
                let batch = acknowledgements.take(limit: configuration.ackBatch)
                let started = ContinuousClock.now
                let policy = reportPolicy
                let breakerPolicy = configuration.breakerPolicy
                let jitter = lock.withLock { breakerPolicy.cooldownJitterFactor(using: &random) }
                let result = session.run { connection in
                    try Acknowledgement.write(batch, worker: self.id, breakerPolicy: policy, jitter: jitter,
                                              archiveSuccesses: self.configuration.retention > .zero, on: connection)
                }
                if case .failure = result {
                    acknowledgements.putBack(batch)
                    if done && lock.withLock({ ackGiveUp }) { return }
                    break
                }
                metrics.recordAckFlush(count: batch.count, latency: ContinuousClock.now - started)
                // Retried or handed-back jobs are in the queue again: let the claim loop look.
                if batch.contains(where: { if case .retry = $0 { true } else if case .handBack = $0 { true } else if case .handBackLater = $0 { true } else { false } }) {
                    claimSignal.signal()
                }
            }
            if done && acknowledgements.count == 0 && lock.withLock({ drained }) { return }
        }
    }

}
