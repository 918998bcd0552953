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
