import Foundation

/// The threads a worker's jobs run on when `WorkerConfiguration.jobThreads` is `.own` (the
/// Swift API's default; `jobworker` uses the pool): the jobs' task group prefers this
/// executor (`Task(executorPreference:)`), so every job, and every resumption after its
/// request returns, runs here rather than on the global cooperative pool.
///
/// Why: the cooperative pool has one thread per core, and whatever else shares the
/// process may hold them: an application embedding the worker that blocks in them, or a
/// test runner whose synchronous tests run beside a test with a worker in it. Jobs
/// waiting for a pool thread would hold their leases without running, so the worker
/// brings threads of its own, as many as the pool has by default.
///
/// FIFO, one lock and one condition; which enqueue wakes a sleeping thread is
/// ``ExecutorWakes``' decision. After `stop()` the threads finish what is queued and
/// exit, and anything enqueued later (a job that ignored its abort, resumed once its
/// request ended) runs on the global executor, so no task is ever stranded.
final class JobExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [UnownedJob] = []
    private var head = 0
    private var wakes = ExecutorWakes()
    private var stopped = false

    /// Starts `threads` threads (at least 1) named `name` (Linux keeps 15 bytes of a thread name).
    init(threads: Int = ProcessInfo.processInfo.activeProcessorCount, name: String = "courier-jobs") {
        for _ in 0..<max(1, threads) {
            let thread = Thread { [self] in
                ServiceThread.nameCurrentThread(name)
                runLoop()
            }
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        if stopped {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        queue.append(UnownedJob(job))
        let wake = wakes.jobQueued()
        condition.unlock()
        if wake { condition.signal() }
    }

    /// The threads exit once the jobs queued so far have run; later jobs go to the global executor.
    func stop() {
        condition.lock()
        stopped = true
        condition.unlock()
        condition.broadcast()
    }

    private func runLoop() {
        while let job = next() {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// The oldest queued job; waits while there is none; nil once stopped and drained.
    private func next() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count {
            if stopped { return nil }
            wakes.threadWillWait()
            condition.wait()
            wakes.threadWoke()
        }
        let job = queue[head]
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return job
    }
}

/// When an enqueue on ``JobExecutor`` signals a sleeping thread: only when a sleeping
/// thread is left that no signal is on its way to yet. Signalling on every enqueue while
/// any thread slept (as before) woke the same sleeper again and again while its first
/// wake-up was still under way: a claim of 100 jobs sent up to 100 signals for at most
/// the executor's thread count of sleepers.
///
/// Safe with jobs that block their thread: an enqueue never counts on a thread that is
/// awake (it may be stuck in a job); it is skipped only when every sleeping thread is
/// already being woken, and each of those looks at the queue before it sleeps again.
/// Counted under the executor's lock.
struct ExecutorWakes: Sendable, Equatable {
    /// Threads waiting on the condition.
    private(set) var sleeping = 0
    /// Signals sent that no thread has woken from yet.
    private(set) var signalsOnTheirWay = 0

    /// A job was queued: true when the caller should signal one sleeping thread.
    mutating func jobQueued() -> Bool {
        guard sleeping > signalsOnTheirWay else { return false }
        signalsOnTheirWay += 1
        return true
    }

    /// A thread found the queue empty and is about to wait.
    mutating func threadWillWait() { sleeping += 1 }

    /// A thread returned from its wait (signalled, or spuriously: then it takes a signal's
    /// place, and at worst one more signal is sent later than needed; none is ever missing).
    mutating func threadWoke() {
        sleeping -= 1
        if signalsOnTheirWay > 0 { signalsOnTheirWay -= 1 }
    }
}
