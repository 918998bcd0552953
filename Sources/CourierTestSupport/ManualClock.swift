import Foundation

/// A monotonic clock a test moves by hand.
public final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var instant = ContinuousClock.now

    public init() {}

    /// The clock's present instant.
    public var now: ContinuousClock.Instant { lock.withLock { instant } }

    /// Moves the clock forward.
    public func advance(_ duration: Duration) { lock.withLock { instant += duration } }
}
