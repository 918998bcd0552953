import Foundation

/// The clocks a worker reads: wall time (for the database's timestamps and retry
/// times) and a monotonic clock (for intervals and deadlines). Tests inject their own.
public struct WorkerClock: Sendable {
    public var now: @Sendable () -> Date
    public var instant: @Sendable () -> ContinuousClock.Instant

    public init(now: @escaping @Sendable () -> Date, instant: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.now = now
        self.instant = instant
    }

    /// The system's clocks.
    public static let system = WorkerClock(now: { Date() }, instant: { .now })
}
