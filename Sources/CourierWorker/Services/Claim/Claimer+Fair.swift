import CourierCore
import CourierStore
import Foundation

/// Fair claiming across destinations without a traffic policy: the statements of a round
/// come from ``ClaimPlanner``; this runs them and tells the planner what they returned.
extension Claimer {
    /// What one planned round claimed.
    struct RoundResult {
        /// Jobs taken, by every step.
        var claimed: Int
        /// The plain step came back full: more jobs are probably runnable.
        var plainFull: Bool
    }

    /// The spread claim looks at no more destinations than this many per job it may take (and at least 16).
    static let spreadVisitsPerJob = 2

    /// Claims up to `want` jobs of `queue` as the planner says; nil when a statement failed.
    func claimPlanned(queue: String, want: Int, now: ContinuousClock.Instant) -> RoundResult? {
        let busiest = busiestIfNearShare(free: want)
        let steps = withPlanner(queue) { $0.plan(.init(free: want, busiest: busiest), now: now) }
        var claimed = 0
        var plainFull = false
        for step in steps {
            let left = want - claimed
            guard left > 0 else { break }
            switch step {
            case .spread(let limit, let perDestination, let after, let excluding):
                let limit = min(limit, left)
                let result = runClaim { store in
                    try store.jobsClaimSpread(queue: queue, limit: limit, perDestination: perDestination, after: after,
                                              excluding: excluding, visit: max(16, limit * Self.spreadVisitsPerJob),
                                              worker: self.configuration.worker,
                                              leaseMilliseconds: self.configuration.leaseMilliseconds)
                }
                guard let round = result else { return nil }
                let jobs = round.jobs
                withPlanner(queue) {
                    $0.spreadClaimed(limit: limit, destinations: jobs.map(\.destination), visited: round.visited, now: now)
                }
                if !jobs.isEmpty {
                    metrics.recordClaim(batch: jobs.count)
                    intake.accept(jobs, probeGeneration: nil, provenAt: now)
                }
                claimed += jobs.count
            case .plain(let limit):
                let limit = min(limit, left)
                // From the claim's bound (ClaimBounds); one that came back short is followed
                // by a claim from the start before the round ends.
                guard let taken = claimPlain(queue: queue, limit: limit, now: now) else { return nil }
                var jobs = taken.jobs
                if taken.restart, jobs.count < limit {
                    guard let more = claimPlain(queue: queue, limit: limit - jobs.count, now: now) else { return nil }
                    jobs += more.jobs
                }
                withPlanner(queue) { $0.plainClaimed(limit: limit, destinations: jobs.map(\.destination)) }
                claimed += jobs.count
                plainFull = jobs.count == limit
            }
        }
        return RoundResult(claimed: claimed, plainFull: plainFull)
    }

    /// Free slots the claim trigger would leave waiting that only a spread claim may fill
    /// (the busiest destination is at its share), and a spread claim is allowed now.
    func reserveClaimDue(free: Int, now: ContinuousClock.Instant) -> Bool {
        guard free > 0, let busiest = busiestIfNearShare(free: free) else { return false }
        return configuration.queues.contains { queue in
            withPlanner(queue) { planner in
                planner.plan(.init(free: free, busiest: busiest), now: now).contains {
                    if case .spread = $0 { return true } else { return false }
                }
            }
        }
    }

    /// The destination holding the most slots, read only when it could reach its share this round.
    private func busiestIfNearShare(free: Int) -> (destination: String, count: Int)? {
        let share = withPlanner(configuration.queues[0]) { $0.share }
        guard intake.heldCount + free > share else { return nil }
        return intake.busiestDestination
    }

    /// When a spread claim held back after an empty one may run again, for any queue.
    func spreadRecheck(now: ContinuousClock.Instant) -> Duration? {
        configuration.queues.compactMap { queue in withPlanner(queue) { $0.spreadRecheck(now: now) } }.min()
    }
}
