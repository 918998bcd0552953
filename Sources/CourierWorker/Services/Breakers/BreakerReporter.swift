import CourierCore
import CourierStore
import Foundation

/// Gathers breaker evidence from finished attempts (per destination, in memory) and
/// reports it in small batches, so the success path writes nothing to a breaker row
/// per job. Reports at once when its own evidence alone would trip a breaker.
final class BreakerReporter: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        var worker: UUID
        var breakerPolicy: BreakerPolicy
        /// How often evidence is reported. Default 250 ms.
        var interval: Duration = .milliseconds(250)

        init(_ c: WorkerConfiguration, worker: UUID) {
            self.worker = worker
            breakerPolicy = c.breakerPolicy
        }
    }

    let name = "courier-breaker-report"
    let configuration: Configuration
    private let session: StoreSession
    private let logger: Logger
    private let random: @Sendable (BreakerPolicy) -> Duration
    /// Wakes this service's thread (set once the thread exists).
    var wake: @Sendable () -> Void = {}

    private let lock = NSLock()
    private var evidence: [String: BreakerEvidence] = [:]
    /// When each destination's unreported evidence began to gather.
    private var gatheringSince: [String: ContinuousClock.Instant] = [:]
    /// When this worker last reported failures per destination (pure-success evidence
    /// is only worth a write while failures are being counted).
    private var lastFailureReport: [String: ContinuousClock.Instant] = [:]

    /// - Parameter jitteredCooldown: draws the first open period for a report (injected randomness).
    init(configuration: Configuration, session: StoreSession, logger: Logger,
         jitteredCooldown: @escaping @Sendable (BreakerPolicy) -> Duration) {
        self.configuration = configuration
        self.session = session
        self.logger = logger
        self.random = jitteredCooldown
    }

    /// Counts one finished attempt against its destination.
    func note(_ destination: String, _ classification: Classification, now: ContinuousClock.Instant = .now) {
        guard classification.succeeded || classification.countsAsBreakerFailure else { return }
        let tripsAlone = lock.withLock { () -> Bool in
            if gatheringSince[destination] == nil { gatheringSince[destination] = now }
            evidence[destination, default: BreakerEvidence()].record(classification)
            return evidence[destination]!.wouldTrip(configuration.breakerPolicy)
        }
        // Our own evidence would open the breaker: report now, not at the next round.
        if tripsAlone { wake() }
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        report(now: now)
        return configuration.interval
    }

    func finish() {
        report(now: .now)
        session.close()
    }

    /// Writes the evidence gathered since the last report, one call per destination.
    ///
    /// Success-only evidence is not worth a write on its own, but it is not thrown away
    /// either: it waits for the destination's next failure and goes with it, so isolated
    /// failures seen by different workers never add up to "consecutive failures" over
    /// the successes in between. Successes older than a window shrink to one (enough to
    /// break a run of failures, too little to dilute the window's failure rate), and a
    /// destination quiet for ten windows is forgotten.
    func report(now: ContinuousClock.Instant) {
        let window = configuration.breakerPolicy.window
        let batch = lock.withLock { () -> [(String, BreakerEvidence)] in
            var due: [(String, BreakerEvidence)] = []
            for (destination, gathered) in evidence {
                let recentlyFailing = lastFailureReport[destination].map { now - $0 < window } ?? false
                if gathered.failures > 0 || recentlyFailing {
                    due.append((destination, gathered))
                    if gathered.failures > 0 { lastFailureReport[destination] = now }
                    evidence[destination] = nil
                    gatheringSince[destination] = nil
                } else if let since = gatheringSince[destination], now - since >= window {
                    if now - since >= window * 10 {
                        evidence[destination] = nil
                        gatheringSince[destination] = nil
                    } else if gathered.successes > 1 {
                        evidence[destination] = BreakerEvidence(successes: 1)
                    }
                }
            }
            lastFailureReport = lastFailureReport.filter { now - $0.value < window }
            return due
        }
        guard !batch.isEmpty else { return }
        let worker = configuration.worker.uuidString.lowercased()
        // The first open period is jittered like the later ones (which the database scales
        // by the factor a probe result carries), so breakers that trip together spread out;
        // the database keeps the nominal cooldown for the next doubling.
        let cooldowns = batch.map { _ in Int64(random(configuration.breakerPolicy).milliseconds) }
        _ = session.run { store in
            for ((destination, gathered), cooldown) in zip(batch, cooldowns) {
                var policy = self.configuration.breakerPolicy.reportPolicy
                policy.openMilliseconds = cooldown
                let state = try store.breakerReport(
                    destination: destination, successes: gathered.successes, failures: gathered.failures,
                    trailingFailures: gathered.consecutiveFailures, worker: worker, policy: policy)
                if state == "open" && gathered.failures > 0 {
                    self.logger.debug("breaker evidence reported", [("destination", destination), ("failures", gathered.failures), ("state", state)])
                }
            }
        }
    }
}

extension BreakerPolicy {
    /// The policy as the breaker statements take it.
    var reportPolicy: BreakersTable.ReportPolicy {
        BreakersTable.ReportPolicy(
            failureThreshold: failureThreshold, windowMilliseconds: Int64(window.milliseconds),
            minimumVolume: minimumVolume, failureRate: failureRateThreshold,
            cooldownMilliseconds: Int64(cooldown.milliseconds), cooldownMaxMilliseconds: Int64(cooldownMax.milliseconds),
            probeLeaseMilliseconds: Int64(probeLease.milliseconds))
    }
}
