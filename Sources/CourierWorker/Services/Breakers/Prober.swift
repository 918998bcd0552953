import CourierCore
import CourierStore
import Foundation

/// Wins and starts half-open probes for destinations whose cooldown is over:
/// exactly one worker in the fleet gets each probe (a compare-and-set in SQL).
final class Prober: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        var worker: UUID
        var queues: [String]
        var leaseMilliseconds: Int
        var probeLeaseMilliseconds: Int64
        /// How often due probes are looked for. Default 250 ms.
        var interval: Duration = .milliseconds(250)

        init(_ c: WorkerConfiguration, leases: LeaseSettings, worker: UUID) {
            self.worker = worker
            queues = c.queues
            leaseMilliseconds = leases.leaseMilliseconds
            probeLeaseMilliseconds = leases.probeLeaseMilliseconds
        }
    }

    let name = "courier-probe"
    let configuration: Configuration
    private let session: StoreSession
    private unowned let intake: any JobIntake
    private let logger: Logger

    init(configuration: Configuration, session: StoreSession, intake: any JobIntake, logger: Logger) {
        self.configuration = configuration
        self.session = session
        self.intake = intake
        self.logger = logger
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        guard intake.freeSlots > 0,
              case .success(let due) = session.run({ try $0.breakersDueForProbe(queues: self.configuration.queues) }),
              !due.isEmpty else { return configuration.interval }
        let worker = configuration.worker
        for destination in due.shuffled() where intake.freeSlots > 0 {
            let result = session.run { store -> (Int64, ClaimedJob?)? in
                guard let generation = try store.breakerTryProbe(
                    destination: destination, worker: worker,
                    probeLeaseMilliseconds: self.configuration.probeLeaseMilliseconds) else { return nil }
                let job = try store.jobClaimProbe(destination: destination, generation: generation,
                                                  queues: self.configuration.queues, worker: worker,
                                                  leaseMilliseconds: self.configuration.leaseMilliseconds)
                return (generation, job)
            }
            guard case .success(let won?) = result else { continue }
            guard let job = won.1 else {
                // Won, but the job went elsewhere meanwhile: give the probe back rather than stall the breaker.
                _ = session.run { try $0.breakerAbandonProbe(destination: destination, generation: won.0,
                                                             worker: worker.uuidString.lowercased()) }
                continue
            }
            logger.info("breaker half-open; probing", [("job", job.id), ("queue", job.queue), ("destination", destination),
                                                        ("attempt", job.attempt), ("class", "none"), ("generation", won.0)])
            intake.accept([job], probeGeneration: won.0, provenAt: now)
        }
        return configuration.interval
    }

    func finish() { session.close() }
}
