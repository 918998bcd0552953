import CourierStore
import Foundation
import Testing

/// Waiting that holds no thread of Swift's cooperative pool. The in-process worker runs
/// its jobs as tasks on that pool, which has only as many threads as the machine has
/// cores: a test that waits with `Thread.sleep` (as `eventually` and `waitFor` do) takes
/// one away, and two such tests at once on a 2-core machine starve every worker.
extension WorkerHarness {
    /// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
    func eventuallyAsync(timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async rethrows -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try condition()
    }

    /// Waits until job `id` reaches `status`, recording an issue if it does not within `timeout`.
    func waitForAsync(_ id: Int64, _ status: JobRecord.Status, timeout: Duration = .seconds(20),
                      sourceLocation: SourceLocation = #_sourceLocation) async throws -> JobRecord {
        let reached = try await eventuallyAsync(timeout: timeout) { try self.status(id) == status }
        let record = try job(id)
        #expect(reached, "job \(id) should become \(status), is \(String(describing: record?.status)) \(record?.errors.map(\.message) ?? [])",
                sourceLocation: sourceLocation)
        return try #require(record, sourceLocation: sourceLocation)
    }
}
