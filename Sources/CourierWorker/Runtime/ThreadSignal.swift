import CourierCore
import Foundation

/// Wakes a dedicated thread early from a timed wait. A signal sent while nobody
/// waits is remembered, so the next wait returns at once.
final class ThreadSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending = false

    func signal() {
        condition.lock()
        pending = true
        condition.signal()
        condition.unlock()
    }

    /// Waits until signalled or `timeout` passes. Returns true when signalled.
    @discardableResult
    func wait(timeout: Duration) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if !pending {
            _ = condition.wait(until: Date(timeIntervalSinceNow: timeout.timeInterval))
        }
        let signalled = pending
        pending = false
        return signalled
    }
}
