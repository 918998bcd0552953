import CourierCore
import Foundation

/// What to do with a job this worker may not run because of its own configuration (a
/// private address without `--allow-private-networks`, a secret it cannot resolve, no
/// handler for the kind). Another worker of the fleet may be configured to run it, so
/// one badly configured worker must not fail the fleet's jobs: the job goes back to the
/// queue without using an attempt, not before ``handBackDelay`` (so the refusing worker
/// does not spin on it and another worker has the chance to claim it).
///
/// The refusals are bounded: the database counts each run of them (`courier.refuse_jobs`,
/// sql/0041: refusals in a row with no attempt made between them, and when the first was).
/// If no worker ran the job ``maximumRun`` after the run's first refusal, or it was refused
/// ``maximumRefusals`` times, it ends as a `permanent` dead letter saying that no worker may
/// run it and why; and sooner if its deadline would pass before the next try. A pure
/// function of values.
enum LocalRefusal {
    /// How long a refused job waits before any worker may claim it again.
    static let handBackDelay: Duration = .seconds(30)
    /// How long a run of refusals may last before the job ends.
    static let maximumRun: Duration = .seconds(3_600)
    /// How many refusals in a row a job may have (an hour of hand-backs at ``handBackDelay``).
    static let maximumRefusals = 120

    enum Decision: Equatable, Sendable {
        /// Back to the queue, attempt returned, not before now + the delay.
        case handBack(after: Duration)
        /// No worker ran it in time: dead-letter it as `permanent`; the text says why.
        case giveUp(String)
    }

    /// - Parameters:
    ///   - refusedSince: when the job's current run of refusals began (nil: this is its first).
    ///   - refusals: the refusals of that run before this one.
    static func decide(deadline: Date?, refusedSince: Date?, refusals: Int, now: Date) -> Decision {
        let next = now.addingTimeInterval(handBackDelay.timeInterval)
        if let deadline, next >= deadline {
            return .giveUp("no worker could run it before its deadline")
        }
        if let refusedSince, now.timeIntervalSince(refusedSince) >= maximumRun.timeInterval {
            return .giveUp("no worker could run it within \(DurationParser.format(maximumRun)) of its first refusal (\(refusals + 1) refusals)")
        }
        if refusals + 1 >= maximumRefusals {
            return .giveUp("no worker could run it in \(maximumRefusals) tries")
        }
        return .handBack(after: handBackDelay)
    }
}
