import CourierTestSupport
@testable import CourierWorker
import Foundation
import Testing

/// Housekeeping services sharing one thread: each runs on its own interval, or at once when woken.
@Suite struct ServiceBundleTests {
    final class Counting: WorkerService, @unchecked Sendable {
        let name: String
        let interval: Duration
        var runs: [ContinuousClock.Instant] = []
        var finished = 0
        init(_ name: String, every interval: Duration) {
            self.name = name
            self.interval = interval
        }
        func runOnce(now: ContinuousClock.Instant) -> Duration {
            runs.append(now)
            return interval
        }
        func finish() { finished += 1 }
    }

    @Test func membersRunOnTheirOwnIntervalsAndTheBundleSleepsUntilTheEarliest() {
        let clock = ManualClock()
        let t0 = clock.now
        let fast = Counting("fast", every: .milliseconds(250)), slow = Counting("slow", every: .seconds(60))
        let bundle = ServiceBundle(name: "housekeeping", members: [fast, slow], clock: { clock.now })
        #expect(bundle.runOnce(now: t0) == .milliseconds(250))
        #expect(fast.runs.count == 1 && slow.runs.count == 1)
        clock.advance(.milliseconds(250))
        #expect(bundle.runOnce(now: clock.now) == .milliseconds(250))
        #expect(fast.runs.count == 2 && slow.runs.count == 1)
        // Woken: the member runs now, whatever its interval says; the others do not.
        bundle.wake(slow)
        clock.advance(.milliseconds(50))
        _ = bundle.runOnce(now: clock.now)
        #expect(fast.runs.count == 2 && slow.runs.count == 2)
        bundle.finish()
        #expect(fast.finished == 1 && slow.finished == 1)
    }
}
