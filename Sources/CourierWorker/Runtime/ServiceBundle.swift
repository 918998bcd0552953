import CourierCore
import Foundation

/// Several light services run in turn on one thread and one connection: the
/// worker's housekeeping (rescuer, pruner, breaker reporter, prober, stats flusher,
/// settings refresher, scheduler). Each member keeps its own `runOnce(now:)` and
/// interval; the bundle runs every member whose time has come (or that was woken),
/// and sleeps until the earliest next one. None of them renews leases, claims or
/// acknowledges, so a slow member delays only the others here: the heartbeater,
/// claimer, completer and listener keep threads and connections of their own.
final class ServiceBundle: WorkerService, @unchecked Sendable {
    let name: String
    let members: [any WorkerService]
    private let clock: @Sendable () -> ContinuousClock.Instant
    /// When each member is due next (nil: at the next round).
    private var due: [ContinuousClock.Instant?]
    private let woken = Locked(Set<Int>())
    /// Wakes the bundle's thread (set once the thread exists).
    var wakeThread: @Sendable () -> Void = {}

    init(name: String, members: [any WorkerService], clock: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.name = name
        self.members = members
        self.clock = clock
        due = Array(repeating: nil, count: members.count)
    }

    /// Runs `member` at the next round, whatever its interval says.
    func wake(_ member: any WorkerService) {
        guard let index = members.firstIndex(where: { $0 === member }) else { return }
        woken.withLock { _ = $0.insert(index) }
        wakeThread()
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        let wokenNow = woken.withLock { woken -> Set<Int> in defer { woken.removeAll() }; return woken }
        for (index, member) in members.enumerated() {
            // A slow member (a prune) moves the clock on for the ones after it.
            let current = index == 0 ? now : clock()
            guard wokenNow.contains(index) || due[index].map({ $0 <= current }) ?? true else { continue }
            due[index] = current + member.runOnce(now: current)
        }
        let after = clock()
        let next = due.compactMap { $0 }.min() ?? after
        return max(.zero, next - after)
    }

    /// Final writes of every member, in reverse order.
    func finish() {
        for member in members.reversed() { member.finish() }
    }
}
