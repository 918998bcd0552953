@testable import CourierWorker
import CourierTestSupport

/// Waits until each named service thread of `worker` has completed `n` more `runOnce`
/// rounds than when called (River's test signals), and says whether they did. A round
/// under way at the call may count as the first, so `n` >= 2 means at least one whole
/// round ran after the call: "N rounds passed and still nothing happened" replaces a
/// fixed "nothing happens in X seconds" sleep. The timeout only keeps a broken test
/// from hanging.
func waitForRounds(_ worker: Worker, _ services: [String], _ n: Int = 2, timeout: Duration = .seconds(30)) async -> Bool {
    let start = services.map { worker.completedRounds(of: $0) }
    return await eventually(timeout: timeout) {
        zip(services, start).allSatisfy { worker.completedRounds(of: $0) >= $1 + n }
    }
}

/// The service threads' names (Worker.databaseConnections), for ``waitForRounds``.
enum ServiceName {
    static let claimer = "courier-claim"
    static let completer = "courier-ack"
    static let heartbeater = "courier-heartbeat"
    static let housekeeping = "courier-housekeep"
    static let traffic = "courier-traffic"
    static let listener = "courier-listen"
}

extension WorkerHarness {
    /// ``waitForRounds(_:_:_:timeout:)`` for the harness's worker.
    func waitForRounds(_ services: [String], _ n: Int = 2, timeout: Duration = .seconds(30)) async -> Bool {
        await CourierWorkerTests.waitForRounds(worker, services, n, timeout: timeout)
    }
}
