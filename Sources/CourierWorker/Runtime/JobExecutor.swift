import Foundation

/// The threads a worker's jobs run on when `WorkerConfiguration.jobThreads` is `.own` (the
/// default, and `jobworker`'s): the jobs' task group prefers this
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
/// ``ExecutorWakes``' decision. A claim's jobs enter as one batch (`enqueueingBatch`):
/// one thread is woken for all of them and the woken threads wake each other while jobs
/// wait, where a wake-up per job had the threads switching in and out once per no-op job.
/// After `stop()` the threads finish what is queued and exit, and anything enqueued later
/// (a job that ignored its abort, resumed once its request ended) runs on the global
/// executor, so no task is ever stranded.
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
                pthread_setspecific(Self.ownThreadKey, identity)
                runLoop()
            }
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let inBatch = isBatchingOnThisThread
        condition.lock()
        if stopped {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        queue.append(UnownedJob(job))
        let wake = wakes.jobQueued(inBatch: inBatch)
        condition.unlock()
        if wake { condition.signal() }
    }

    /// Runs `body`, in which whatever this thread enqueues here wakes no thread; at its end
    /// one sleeping thread is woken if jobs wait that this thread will not take itself (and
    /// the threads that take them wake the rest, see ``ExecutorWakes``). For code that queues
    /// many tasks at once and then returns to its executor, as the jobs' task group does with
    /// a claim: never run a job in it.
    func enqueueingBatch<T>(_ body: () throws -> T) rethrows -> T {
        let outer = pthread_getspecific(Self.batchingKey)
        pthread_setspecific(Self.batchingKey, identity)
        defer {
            pthread_setspecific(Self.batchingKey, outer)
            if outer != identity { batchEnded() }
        }
        return try body()
    }

    /// The executor `enqueueingBatch` runs for on each thread, if any.
    private static let batchingKey = makeThreadKey()
    /// The executor whose thread this is, if any.
    private static let ownThreadKey = makeThreadKey()

    private static func makeThreadKey() -> pthread_key_t {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
        return key
    }

    private var identity: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private var isBatchingOnThisThread: Bool { pthread_getspecific(Self.batchingKey) == identity }

    private func batchEnded() {
        // A batch ended on one of these threads: it goes back to the queue next and takes a job itself.
        let callerTakesOne = pthread_getspecific(Self.ownThreadKey) == identity
        condition.lock()
        let wake = wakes.batchEnded(jobsWaiting: queue.count - head, callerTakesOne: callerTakesOne)
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
    /// Wakes one more thread when jobs are left behind it (see ``ExecutorWakes``).
    private func next() -> UnownedJob? {
        condition.lock()
        while head == queue.count {
            if stopped {
                condition.unlock()
                return nil
            }
            wakes.threadWillWait()
            condition.wait()
            wakes.threadWoke()
        }
        let job = queue[head]
        head += 1
        let wakeAnother = wakes.jobTaken(jobsLeft: queue.count - head)
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        condition.unlock()
        if wakeAnother { condition.signal() }
        return job
    }
}

/// When ``JobExecutor`` signals a sleeping thread: only when jobs wait and a sleeping
/// thread is left that no signal is on its way to yet. Signalling on every enqueue while
/// any thread slept woke the same sleeper again and again while its first wake-up was
/// still under way: a claim of 100 jobs sent up to 100 signals for at most the executor's
/// thread count of sleepers.
///
/// The moments that may signal:
/// - a job queued from outside a batch (a claim's jobs from elsewhere, a job resumed by the
///   transport's thread);
/// - a batch's end, with jobs waiting beyond the one its own thread takes next (the jobs'
///   group queues a claim's jobs as one batch);
/// - a thread taking a job while more wait, so threads woken for a batch wake the next
///   one in turn, only as long as there is work for it.
///
/// Safe with jobs that block their thread: a job queued outside a batch never counts on a
/// thread that is awake (it may be stuck in a job); it is skipped only when every sleeping
/// thread is already being woken, and each of those looks at the queue before it sleeps
/// again. A batch runs no job, so its thread returns to the queue right after it. Counted
/// under the executor's lock.
struct ExecutorWakes: Sendable, Equatable {
    /// Threads waiting on the condition.
    private(set) var sleeping = 0
    /// Signals sent that no thread has woken from yet.
    private(set) var signalsOnTheirWay = 0

    /// A job was queued: true when the caller should signal one sleeping thread. Never
    /// inside a batch (see ``batchEnded(jobsWaiting:callerTakesOne:)``).
    mutating func jobQueued(inBatch: Bool = false) -> Bool {
        inBatch ? false : signalIfASleeperIsLeft()
    }

    /// A batch of enqueues ended with `jobsWaiting` jobs in the queue; `callerTakesOne`
    /// when it ended on one of the executor's threads, which takes the next job itself.
    mutating func batchEnded(jobsWaiting: Int, callerTakesOne: Bool = false) -> Bool {
        jobsWaiting > (callerTakesOne ? 1 : 0) ? signalIfASleeperIsLeft() : false
    }

    /// A thread took a job and `jobsLeft` still wait.
    mutating func jobTaken(jobsLeft: Int) -> Bool {
        jobsLeft > 0 ? signalIfASleeperIsLeft() : false
    }

    /// A thread found the queue empty and is about to wait.
    mutating func threadWillWait() { sleeping += 1 }

    /// A thread returned from its wait (signalled, or spuriously: then it takes a signal's
    /// place, and at worst one more signal is sent later than needed; none is ever missing).
    mutating func threadWoke() {
        sleeping -= 1
        if signalsOnTheirWay > 0 { signalsOnTheirWay -= 1 }
    }

    private mutating func signalIfASleeperIsLeft() -> Bool {
        guard sleeping > signalsOnTheirWay else { return false }
        signalsOnTheirWay += 1
        return true
    }
}
