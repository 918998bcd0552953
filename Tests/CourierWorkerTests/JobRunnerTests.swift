import CourierTestSupport
@testable import CourierWorker
import Foundation
import Testing

/// The jobs' task group: a cancel reaches the job's own task, before or after it started.
@Suite struct JobRunnerTests {
    typealias Lease = WorkerStateMachine.Lease

    /// What the jobs saw, written from their tasks.
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var cancelled: [Lease: Bool] = [:]
        func record(_ lease: Lease, _ wasCancelled: Bool) { lock.withLock { cancelled[lease] = wasCancelled } }
        var all: [Lease: Bool] { lock.withLock { cancelled } }
    }

    @Test func aCancelReachesARunningJobAndOnlyThatJob() async throws {
        let runner = JobRunner()
        let seen = Seen()
        let one = Lease(id: 1, token: 1), two = Lease(id: 2, token: 1)
        let group = Task {
            await runner.run { lease in
                if lease == one {
                    // Runs until cancelled (the timeout only keeps a broken test from hanging).
                    _ = await eventually(timeout: .seconds(30)) { Task.isCancelled }
                } else {
                    // Ends once the cancelled job has ended: it was running all the while.
                    _ = await eventually(timeout: .seconds(30)) { seen.all[one] != nil }
                }
                seen.record(lease, Task.isCancelled)
            }
        }
        runner.submit([one, two])
        // The same job id with another attempt is a different lease and is not touched.
        runner.cancel([Lease(id: 2, token: 7), one])
        runner.finish()
        await group.value
        #expect(seen.all == [one: true, two: false])
    }

    @Test func aCancelBeforeTheJobStartsIsAppliedAsItStarts() async {
        let cancellations = JobCancellations()
        let lease = Lease(id: 5, token: 2)
        cancellations.expect([lease])
        cancellations.cancel([lease])
        let sawCancel = await Task {
            withUnsafeCurrentTask { cancellations.started(lease, task: $0) }
            defer { cancellations.ended(lease) }
            return Task.isCancelled
        }.value
        #expect(sawCancel)
        #expect(cancellations.count == 0)
    }

    @Test func cancelsOfUnknownLeasesAreIgnoredAndLeaveNothingBehind() {
        let cancellations = JobCancellations()
        cancellations.cancel([Lease(id: 9, token: 1)])
        #expect(cancellations.count == 0)
    }
}
