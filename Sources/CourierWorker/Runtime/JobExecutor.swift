import Foundation

/// The threads a worker's jobs run on: the jobs' task group prefers this executor
/// (`Task(executorPreference:)`), so every job, and every resumption after its request
/// returns, runs here rather than on the global cooperative pool.
///
/// Why: the cooperative pool has one thread per core, and whatever else shares the
/// process may hold them: an application embedding the worker that blocks in them, or a
/// test runner whose synchronous tests run beside a test with a worker in it. Jobs
/// waiting for a pool thread would hold their leases without running, so the worker
/// brings threads of its own, as many as the pool has by default.
///
/// FIFO, one lock and one condition; a thread wakes only when another is not already
/// awake to take the job. After `stop()` the threads finish what is queued and exit, and
/// anything enqueued later (a job that ignored its abort, resumed once its request
/// ended) runs on the global executor, so no task is ever stranded.
final class JobExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [UnownedJob] = []
    private var head = 0
    private var idleThreads = 0
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
        let wake = idleThreads > 0
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
            idleThreads += 1
            condition.wait()
            idleThreads -= 1
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
