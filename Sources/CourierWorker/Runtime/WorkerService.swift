import CourierCore
import Foundation

/// One long-running part of a worker (claimer, completer, heartbeater, ...). Each
/// owns its state and, where it talks to the database, a connection of its own,
/// and runs on a thread of its own because libpq calls block.
protocol WorkerService: AnyObject, Sendable {
    /// The thread's name, also used in logs.
    var name: String { get }
    /// Does one round of work and says how long the thread may wait before the next
    /// (a `wake()` cuts the wait short). Tests call it directly with a chosen `now`.
    func runOnce(now: ContinuousClock.Instant) -> Duration
    /// Runs once on the service's thread after it was told to stop: final writes.
    func finish()
}

/// A service's stop flag, shared by its thread and its store session: backoff
/// pauses end early once a stop is asked for, but are never cut short by work
/// arriving (so a lost database is never hammered).
final class StopGate: @unchecked Sendable {
    private let stopRequested = Locked(false)
    private let signal = ThreadSignal()

    var isStopRequested: Bool { stopRequested.withLock { $0 } }

    func requestStop() {
        stopRequested.withLock { $0 = true }
        signal.signal()
    }

    /// Sleeps `duration`, or less once a stop was asked for; the first slice is always slept so retries never spin.
    func pause(_ duration: Duration) {
        var left = duration
        repeat {
            let slice = min(left, .milliseconds(100))
            if signal.wait(timeout: slice) { signal.signal() }
            left -= slice
        } while left > .zero && !isStopRequested
    }
}

/// Runs one service on a dedicated thread: `runOnce`, then wait for the time it
/// asked for or a wake-up, until stopped; then `finish` once.
final class ServiceThread: @unchecked Sendable {
    let service: any WorkerService
    let gate: StopGate
    private let work = ThreadSignal()
    private let done = DispatchSemaphore(value: 0)
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let started = Locked(false)
    /// The service runs only once this holds (the schema is complete); until then the
    /// thread waits, woken early by `wake()`.
    private let ready: @Sendable () -> Bool
    /// How many `runOnce` rounds have returned: a test seam (River's test signals), so a
    /// test can wait for "N more rounds, and still nothing happened" instead of a fixed
    /// sleep. One locked increment per round; nothing in the product reads it.
    private let rounds = Locked(0)

    /// The `runOnce` rounds completed so far (waiting for the schema is no round).
    var completedRounds: Int { rounds.withLock { $0 } }

    init(_ service: any WorkerService, gate: StopGate, clock: @escaping @Sendable () -> ContinuousClock.Instant,
         ready: @escaping @Sendable () -> Bool = { true }) {
        self.service = service
        self.gate = gate
        self.clock = clock
        self.ready = ready
    }

    func start() {
        started.withLock { $0 = true }
        let thread = Thread { [self] in
            Self.nameCurrentThread(service.name)
            while !gate.isStopRequested {
                guard ready() else {
                    work.wait(timeout: .milliseconds(250))
                    continue
                }
                let wait = service.runOnce(now: clock())
                rounds.withLock { $0 += 1 }
                if gate.isStopRequested { break }
                if wait > .zero { work.wait(timeout: wait) }
            }
            service.finish()
            done.signal()
        }
        thread.name = service.name
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Names the OS thread (what `top -H` and /proc/PID/task/*/comm show; Linux keeps 15
    /// bytes). Foundation's `Thread.name` does not reach the OS thread here, so without this
    /// every service thread carries the name of the pool thread that started it.
    static func nameCurrentThread(_ name: String) {
        // pthread_setname_np is not visible to Swift here; the kernel takes the name from this file.
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Cuts the current wait short (work arrived).
    func wake() { work.signal() }

    /// Asks the loop to end after its current round.
    func requestStop() {
        gate.requestStop()
        work.signal()
    }

    /// Waits until `finish` has returned (at once for a thread never started).
    func join() {
        guard started.withLock({ $0 }) else { return }
        done.wait()
        done.signal()
    }
}
