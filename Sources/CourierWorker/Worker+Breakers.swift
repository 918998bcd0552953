import CourierCore
import CourierStore
import Foundation
import Postgres

/// Breaker evidence (aggregated, reported in batches) and the single half-open probe.
extension Worker {
    func noteEvidence(_ destination: String, _ classification: Classification) {
        guard classification.succeeded || classification.countsAsBreakerFailure else { return }
        let tripsAlone = lock.withLock { () -> Bool in
            evidence[destination, default: BreakerEvidence()].record(classification)
            return evidence[destination]!.wouldTrip(configuration.breakerPolicy)
        }
        // Our own evidence would open the breaker: report now, not at the next tick.
        if tripsAlone { maintenanceSignal.signal() }
    }

    var reportPolicy: BreakersTable.ReportPolicy {
        let p = configuration.breakerPolicy
        return BreakersTable.ReportPolicy(
            failureThreshold: p.failureThreshold, windowMilliseconds: Int64(p.window.milliseconds),
            minimumVolume: p.minimumVolume, failureRate: p.failureRateThreshold,
            cooldownMilliseconds: Int64(p.cooldown.milliseconds), cooldownMaxMilliseconds: Int64(p.cooldownMax.milliseconds),
            probeLeaseMilliseconds: Int64(p.probeLease.milliseconds))
    }

    /// Writes the evidence gathered since the last report, one call per destination.
    func reportEvidence(session: DatabaseSession) {
        let now = ContinuousClock.now
        let window = configuration.breakerPolicy.window
        let batch = lock.withLock { () -> [(String, BreakerEvidence)] in
            var due: [(String, BreakerEvidence)] = []
            for (destination, gathered) in evidence {
                let recentlyFailing = lastFailureReport[destination].map { now - $0 < window } ?? false
                if gathered.failures > 0 || recentlyFailing {
                    due.append((destination, gathered))
                    if gathered.failures > 0 { lastFailureReport[destination] = now }
                }
            }
            evidence.removeAll(keepingCapacity: true)
            lastFailureReport = lastFailureReport.filter { now - $0.value < window }
            return due
        }
        guard !batch.isEmpty else { return }
        let worker = id.uuidString.lowercased()
        // The first open period is jittered like the later ones (which the database scales
        // by the factor a probe result carries), so breakers that trip together spread out.
        let breakerPolicy = configuration.breakerPolicy
        let cooldowns = lock.withLock {
            batch.map { _ in Int64(breakerPolicy.jitteredCooldown(breakerPolicy.cooldown, using: &random).milliseconds) }
        }
        _ = session.run { connection in
            for ((destination, gathered), cooldown) in zip(batch, cooldowns) {
                var policy = self.reportPolicy
                policy.cooldownMilliseconds = cooldown
                let state = try BreakersTable.report(
                    destination: destination, successes: gathered.successes, failures: gathered.failures,
                    trailingFailures: gathered.consecutiveFailures, worker: worker, policy: policy, on: connection)
                if state == "open" && gathered.failures > 0 {
                    self.logger.debug("breaker evidence reported", [("destination", destination), ("failures", gathered.failures), ("state", state)])
                }
            }
        }
    }

    /// Wins and runs probes for destinations whose cooldown is over: exactly one
    /// worker in the fleet gets each probe.
    func runDueProbes(session: DatabaseSession) {
        guard !isStopping, inFlightCount < configuration.concurrency else { return }
        guard case .success(let due) = session.run({ try BreakersTable.dueForProbe(queues: self.configuration.queues, on: $0) }),
              !due.isEmpty else { return }
        let policy = reportPolicy
        for destination in due.shuffled() {
            let result = session.run { connection -> (Int64, ClaimedJob?)? in
                guard let generation = try BreakersTable.tryProbe(destination: destination, worker: self.id,
                                                                  probeLeaseMilliseconds: policy.probeLeaseMilliseconds,
                                                                  on: connection) else { return nil }
                let job = try JobsTable.claimProbe(destination: destination, generation: generation,
                                                   queues: self.configuration.queues, worker: self.id,
                                                   leaseMilliseconds: Int(self.configuration.lease.milliseconds), on: connection)
                return (generation, job)
            }
            guard case .success(let won?) = result else { continue }
            guard let job = won.1 else {
                // Won, but the job went elsewhere meanwhile: give the probe back rather than stall the breaker.
                _ = session.run { try BreakersTable.abandonProbe(destination: destination, generation: won.0,
                                                                 worker: self.id.uuidString.lowercased(), on: $0) }
                continue
            }
            logger.info("breaker half-open; probing", [("job", job.id), ("queue", job.queue), ("destination", destination),
                                                        ("attempt", job.attempt), ("class", "none"), ("generation", won.0)])
            start([job], probeGeneration: won.0)
        }
    }
}
