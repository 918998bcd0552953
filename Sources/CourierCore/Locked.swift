import Foundation

/// A value guarded by a lock: the value is reached only inside ``withLock(_:)``, so it is
/// never read or written without holding the lock. Use it instead of an `NSLock` beside
/// the variable it guards; several fields that change together become one struct.
public final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    /// A lock guarding `state`.
    public init(_ state: State) { self.state = state }

    /// Runs `body` on the value while holding the lock; what it returns is returned.
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
