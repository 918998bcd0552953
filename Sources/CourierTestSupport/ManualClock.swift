import Foundation

/// A monotonic clock a test moves by hand.
public final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var instant = ContinuousClock.now
    private var action: (@Sendable () -> Void)?

    public init() {}

    /// The clock's present instant. Runs the action set with ``onNextRead(_:)``, if any,
    /// first (outside the clock's lock).
    public var now: ContinuousClock.Instant {
        let (value, pending) = lock.withLock { () -> (ContinuousClock.Instant, (@Sendable () -> Void)?) in
            defer { action = nil }
            return (instant, action)
        }
        pending?()
        return value
    }

    /// Moves the clock forward.
    public func advance(_ duration: Duration) { lock.withLock { instant += duration } }

    /// Runs `action` once, at the next read of ``now``: puts an event at a precise point
    /// inside a service's round (one that reads the clock there).
    public func onNextRead(_ action: @escaping @Sendable () -> Void) { lock.withLock { self.action = action } }
}
