import Dispatch
import Foundation
import Testing
@testable import CourierWorker

/// The worker's own threads for its jobs (`JobExecutor`).
@Suite struct JobExecutorTests {
    /// A task that prefers the executor runs, and resumes after a suspension, while every
    /// thread of the global cooperative pool is blocked; the same task without the
    /// preference could not start until they were released.
    @Test func jobsRunWhileTheCooperativePoolIsBlocked() {
        let executor = JobExecutor(threads: 1, name: "courier-jobs-t")
        defer { executor.stop() }
        let gate = DispatchSemaphore(value: 0)
        let blockers = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<blockers {
            Task.detached { _ = gate.wait(timeout: .now() + 60) }
        }
        defer { for _ in 0..<blockers { gate.signal() } }

        let done = DispatchSemaphore(value: 0)
        let threadNames = ThreadNames()
        Task(executorPreference: executor) {
            threadNames.record()
            await Task.yield()
            // Resumed from a thread of its own, as the HTTP transport resumes a job.
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Thread { continuation.resume() }.start()
            }
            threadNames.record()
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success, "the preferred task did not finish while the pool was blocked")
        #expect(threadNames.names == ["courier-jobs-t", "courier-jobs-t"])
    }

    /// After `stop()` a task that still prefers the executor runs on the global executor.
    @Test func afterStopJobsGoToTheGlobalExecutor() async {
        let executor = JobExecutor(threads: 2)
        executor.stop()
        let ran = await Task(executorPreference: executor) { () -> Int in
            await Task.yield()
            return 42
        }.value
        #expect(ran == 42)
    }

    /// Jobs enqueued together all run, none twice, whatever thread takes them.
    @Test func everyJobRunsOnce() async {
        let executor = JobExecutor(threads: 3)
        defer { executor.stop() }
        let total = await Task(executorPreference: executor) { () -> Int in
            await withTaskGroup(of: Int.self) { group in
                for value in 1...2_000 {
                    group.addTask {
                        await Task.yield()
                        return value
                    }
                }
                return await group.reduce(0, +)
            }
        }.value
        #expect(total == 2_000 * 2_001 / 2)
    }

    /// A job that blocks its thread (a handler doing synchronous I/O) does not hold back a
    /// job queued behind it: the other thread is woken for it. (A rule that skipped the
    /// wake-up because a thread was awake would leave the second job waiting here.)
    @Test func aJobQueuedBehindAJobThatBlocksItsThreadRunsOnTheOtherThread() async {
        let executor = JobExecutor(threads: 2)
        defer { executor.stop() }
        let secondRan = DispatchSemaphore(value: 0)
        let blockerStarted = DispatchSemaphore(value: 0)
        let blocker = Task(executorPreference: executor) { () -> Bool in
            blockerStarted.signal()
            // Blocks its thread until the second job has run, at most 20 s.
            return secondRan.wait(timeout: .now() + 20) == .success
        }
        blockerStarted.wait()
        Task(executorPreference: executor) { secondRan.signal() }
        #expect(await blocker.value, "the job queued behind a blocked thread did not run on the other thread")
    }
}

/// A claim's jobs enter as one batch, and every job of it runs, whatever the threads do.
extension JobExecutorTests {
    /// Jobs queued in a batch wake no thread until the batch ends; then all of them run,
    /// spread over the threads that the first woken one wakes in turn.
    @Test func aBatchsJobsAllRunOnceItEnds() async {
        let executor = JobExecutor(threads: 2, name: "courier-jobs-b")
        defer { executor.stop() }
        let ran = Counter()
        let threadNames = ThreadNames()
        let total = await Task(executorPreference: executor) { () -> Int in
            await withDiscardingTaskGroup { group in
                executor.enqueueingBatch {
                    for _ in 0..<500 {
                        group.addTask {
                            threadNames.record()
                            ran.increment()
                        }
                    }
                }
            }
            return ran.value
        }.value
        #expect(total == 500)
        #expect(Set(threadNames.names) == ["courier-jobs-b"])
    }

    /// A job of a batch that blocks its thread does not hold back the rest of the batch:
    /// the thread that takes a job while others wait wakes the other thread.
    @Test func aBatchBehindAJobThatBlocksItsThreadRunsOnTheOtherThread() async {
        let executor = JobExecutor(threads: 2)
        defer { executor.stop() }
        let secondRan = DispatchSemaphore(value: 0)
        let blocked = await Task(executorPreference: executor) { () -> Bool in
            await withTaskGroup(of: Bool.self) { group in
                executor.enqueueingBatch {
                    // Blocks its thread until the second job has run, at most 20 s.
                    group.addTask { secondRan.wait(timeout: .now() + 20) == .success }
                    group.addTask {
                        secondRan.signal()
                        return true
                    }
                }
                return await group.allSatisfy { $0 }
            }
        }.value
        #expect(blocked, "the second job of the batch did not run beside the blocked one")
    }
}

/// ``ExecutorWakes``, one event at a time.
@Suite struct ExecutorWakesTests {
    @Test func aBurstOfJobsSignalsEachSleepingThreadOnce() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        wakes.threadWillWait()
        var signals = 0
        for _ in 0..<100 where wakes.jobQueued() { signals += 1 }
        #expect(signals == 2)
        #expect(wakes.signalsOnTheirWay == 2)
    }

    @Test func noSignalWhileNoThreadSleeps() {
        var wakes = ExecutorWakes()
        let signalled = wakes.jobQueued()
        #expect(!signalled)
        #expect(wakes.signalsOnTheirWay == 0)
    }

    @Test func aThreadThatWokeAndSleptAgainIsSignalledAgain() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        let first = wakes.jobQueued()
        let second = wakes.jobQueued()
        #expect(first && !second)
        wakes.threadWoke()
        #expect(wakes == ExecutorWakes())
        wakes.threadWillWait()
        let afterSleepingAgain = wakes.jobQueued()
        #expect(afterSleepingAgain)
    }

    /// A spurious wake-up takes the place of a signal: never fewer signals than sleepers
    /// need, so no queued job is left with every thread asleep.
    @Test func aSpuriousWakeUpNeverLeavesASleeperUnsignalled() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        wakes.threadWillWait()
        let forOneSleeper = wakes.jobQueued()
        #expect(forOneSleeper)
        wakes.threadWoke()               // the other wakes spuriously first
        #expect(wakes.sleeping == 1 && wakes.signalsOnTheirWay == 0)
        let forTheRemainingSleeper = wakes.jobQueued()
        #expect(forTheRemainingSleeper)
        #expect(wakes.signalsOnTheirWay <= wakes.sleeping)
    }

    @Test func aBatchSignalsOnlyAtItsEndAndTakersWakeTheNextSleeper() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        wakes.threadWillWait()
        var inBatch = 0
        for _ in 0..<100 where wakes.jobQueued(inBatch: true) { inBatch += 1 }
        #expect(inBatch == 0 && wakes.signalsOnTheirWay == 0)
        let atTheEnd = wakes.batchEnded(jobsWaiting: 100)
        #expect(atTheEnd && wakes.signalsOnTheirWay == 1)
        wakes.threadWoke()
        // The woken thread takes a job with 99 left: it wakes the other sleeper.
        let chained = wakes.jobTaken(jobsLeft: 99)
        #expect(chained && wakes.signalsOnTheirWay == 1)
        wakes.threadWoke()
        // Every thread awake: taking more jobs signals nobody.
        let noSleeperLeft = wakes.jobTaken(jobsLeft: 98)
        #expect(!noSleeperLeft && wakes == ExecutorWakes())
    }

    /// A batch that ended on an executor thread leaves it one job: a claim of one job wakes
    /// nobody, a claim of two wakes one sleeper.
    @Test func aBatchEndingOnAnExecutorThreadLeavesItOneJob() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        let forOneJob = wakes.batchEnded(jobsWaiting: 1, callerTakesOne: true)
        #expect(!forOneJob && wakes.signalsOnTheirWay == 0)
        let forTwoJobs = wakes.batchEnded(jobsWaiting: 2, callerTakesOne: true)
        #expect(forTwoJobs && wakes.signalsOnTheirWay == 1)
        var fromElsewhere = ExecutorWakes()
        fromElsewhere.threadWillWait()
        let oneJobFromElsewhere = fromElsewhere.batchEnded(jobsWaiting: 1)
        #expect(oneJobFromElsewhere)
    }

    @Test func nothingIsSignalledForAnEmptyQueue() {
        var wakes = ExecutorWakes()
        wakes.threadWillWait()
        let emptyBatch = wakes.batchEnded(jobsWaiting: 0)
        let lastJobTaken = wakes.jobTaken(jobsLeft: 0)
        #expect(!emptyBatch && !lastJobTaken && wakes.signalsOnTheirWay == 0)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Names of the OS threads a task ran on (as the kernel has them), recorded from synchronous code.
private final class ThreadNames: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [String] = []

    func record() {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines) ?? ""
        lock.withLock { recorded.append(name) }
    }

    var names: [String] { lock.withLock { recorded } }
}
