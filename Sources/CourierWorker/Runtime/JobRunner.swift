import Foundation

/// Runs jobs as child tasks of one task group, for the life of the worker. Jobs
/// arrive from the claiming threads through `submit`; each can be aborted on its
/// own (operator cancel, shutdown after the grace) through `cancel`. The group
/// ends once `finish` was called and every job has returned.
final class JobRunner: @unchecked Sendable {
    typealias Lease = WorkerStateMachine.Lease

    private let stream: AsyncStream<Lease>
    private let continuation: AsyncStream<Lease>.Continuation
    private let lock = NSLock()
    private var cancellations: [Lease: JobCancellation] = [:]

    init() {
        (stream, continuation) = AsyncStream<Lease>.makeStream()
    }

    /// Hands leases to the group (callable from any thread).
    func submit(_ leases: [Lease]) {
        lock.withLock {
            for lease in leases { cancellations[lease] = JobCancellation() }
        }
        for lease in leases { continuation.yield(lease) }
    }

    /// Aborts running jobs: their tasks see cancellation (an HTTP request is aborted).
    func cancel(_ leases: [Lease]) {
        let found = lock.withLock { leases.compactMap { cancellations[$0] } }
        found.forEach { $0.cancel() }
    }

    /// No more jobs will be submitted; `run` returns once the running ones are done.
    func finish() { continuation.finish() }

    /// Runs every submitted job with `execute` until `finish` and the last job ends.
    func run(_ execute: @escaping @Sendable (Lease) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for await lease in stream {
                let cancellation = lock.withLock { cancellations[lease] } ?? JobCancellation()
                group.addTask { [self] in
                    // The job and a watcher for its cancellation race; whichever ends first
                    // cancels the other, so an abort reaches the job as task cancellation.
                    await withTaskGroup(of: Void.self) { race in
                        race.addTask { await execute(lease) }
                        race.addTask { await cancellation.wait() }
                        await race.next()
                        race.cancelAll()
                    }
                    lock.withLock { _ = cancellations.removeValue(forKey: lease) }
                }
            }
        }
    }
}

/// A one-shot cancellation a job's watcher task waits on.
final class JobCancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false
    private var waiter: CheckedContinuation<Void, Never>?

    func cancel() {
        let resume = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            cancelled = true
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// Returns when cancelled, or when the waiting task itself is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = lock.withLock { () -> Bool in
                    if cancelled || Task.isCancelled { return true }
                    waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            cancel()
        }
    }
}
