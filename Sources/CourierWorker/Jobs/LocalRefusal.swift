import CourierCore
import Foundation

/// What to do with a job this worker may not run because of its own configuration (a
/// private address without `--allow-private-networks`, a secret it cannot resolve, no
/// handler for the kind). Another worker of the fleet may be configured to run it, so
/// one badly configured worker must not fail the fleet's jobs: the job goes back to the
/// queue without using an attempt, not before ``handBackDelay`` (so the refusing worker
/// does not spin on it and another worker has the chance to claim it).
///
/// If no worker can ever run it, the job still ends: as a `permanent` dead letter (the
/// refusal as its message) once its deadline would pass before the next try, or, for a
/// job without a deadline, ``maximumAge`` after it was enqueued. A pure function of values.
enum LocalRefusal {
    /// How long a refused job waits before any worker may claim it again.
    static let handBackDelay: Duration = .seconds(30)
    /// How long a job without a deadline may keep being refused.
    static let maximumAge: Duration = .seconds(86_400)
    /// How long after its last refusal a worker still reports itself degraded.
    static let degradedFor: Duration = .seconds(300)

    enum Decision: Equatable, Sendable {
        /// Back to the queue, attempt returned, not before now + the delay.
        case handBack(after: Duration)
        /// No worker ran it in time: dead-letter it as `permanent`.
        case giveUp(String)
    }

    static func decide(deadline: Date?, createdAt: Date?, now: Date) -> Decision {
        let next = now.addingTimeInterval(handBackDelay.timeInterval)
        if let deadline {
            return next < deadline ? .handBack(after: handBackDelay)
                : .giveUp("no worker could run it before its deadline")
        }
        if let createdAt, now.timeIntervalSince(createdAt) >= maximumAge.timeInterval {
            return .giveUp("no worker could run it within \(DurationParser.format(maximumAge)) of enqueue")
        }
        return .handBack(after: handBackDelay)
    }
}
