import CourierCore
import Foundation

/// Runs jobs as child tasks of one task group, for the life of the worker. Jobs
/// arrive from the claiming threads through `submit`, one stream element per claim;
/// each can be aborted on its own (operator cancel, shutdown after the grace) through
/// `cancel`, which cancels that job's own child task (see `JobCancellations`): no
/// second task per job watches for it. The group ends once `finish` was called and
/// every job has returned.
final class JobRunner: Sendable {
    typealias Lease = WorkerStateMachine.Lease

    private let stream: AsyncStream<[Lease]>
    private let continuation: AsyncStream<[Lease]>.Continuation
    private let cancellations = JobCancellations()

    init() {
        (stream, continuation) = AsyncStream<[Lease]>.makeStream()
    }

    /// Hands leases to the group (callable from any thread).
    func submit(_ leases: [Lease]) {
        guard !leases.isEmpty else { return }
        cancellations.expect(leases)
        continuation.yield(leases)
    }

    /// Aborts running jobs: their tasks see cancellation (an HTTP request is aborted).
    /// A job submitted but not yet started is cancelled as it starts.
    func cancel(_ leases: [Lease]) { cancellations.cancel(leases) }

    /// No more jobs will be submitted; `run` returns once the running ones are done.
    func finish() { continuation.finish() }

    /// Runs every submitted job with `execute` until `finish` and the last job ends. With
    /// `executor` (the executor the caller's task prefers), each claim's jobs enter it as one
    /// batch (see ``JobExecutor/enqueueingBatch(_:)``).
    func run(on executor: JobExecutor? = nil, _ execute: @escaping @Sendable (Lease) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for await leases in stream {
                if let executor {
                    executor.enqueueingBatch { add(leases, to: &group, execute) }
                } else {
                    add(leases, to: &group, execute)
                }
            }
        }
    }

    private func add(_ leases: [Lease], to group: inout DiscardingTaskGroup,
                     _ execute: @escaping @Sendable (Lease) async -> Void) {
        for lease in leases {
            group.addTask { [cancellations] in
                withUnsafeCurrentTask { task in cancellations.started(lease, task: task) }
                await execute(lease)
                cancellations.ended(lease)
            }
        }
    }
}

/// Which job task to cancel for a lease, keyed by (id, attempt).
///
/// A job's task registers itself when it starts and unregisters before it returns;
/// `cancel` cancels it directly under the same lock, so a task reference is never used
/// after its task ended. A cancel that arrives between submit and start is remembered
/// and applied when the task starts. Leases never submitted are ignored.
final class JobCancellations: @unchecked Sendable {
    typealias Lease = WorkerStateMachine.Lease

    private enum Entry {
        case waiting(cancelled: Bool)
        case running(UnsafeCurrentTask?)
    }

    private let entries = Locked<[Lease: Entry]>([:])

    /// Leases about to be handed to the group.
    func expect(_ leases: [Lease]) {
        entries.withLock { entries in
            for lease in leases { entries[lease] = .waiting(cancelled: false) }
        }
    }

    /// Called by the job's own task as it starts; cancels it at once if asked before.
    func started(_ lease: Lease, task: UnsafeCurrentTask?) {
        entries.withLock { entries in
            if case .waiting(cancelled: true)? = entries[lease] { task?.cancel() }
            entries[lease] = .running(task)
        }
    }

    /// Called by the job's own task before it returns.
    func ended(_ lease: Lease) {
        entries.withLock { _ = $0.removeValue(forKey: lease) }
    }

    func cancel(_ leases: [Lease]) {
        entries.withLock { entries in
            for lease in leases {
                switch entries[lease] {
                case .waiting?: entries[lease] = .waiting(cancelled: true)
                case .running(let task)?: task?.cancel()
                case nil: break
                }
            }
        }
    }

    /// Leases submitted or running (for tests).
    var count: Int { entries.withLock { $0.count } }
}
