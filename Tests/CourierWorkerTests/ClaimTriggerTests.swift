@testable import CourierWorker
import Testing

/// When the claimer claims, and when a finished job wakes it: one decision at a time.
@Suite struct ClaimTriggerTests {
    let t0 = ContinuousClock.now
    let trigger = ClaimTrigger(claimBatch: 100, concurrency: 256, linger: .milliseconds(50))

    @Test func theThresholdIsHalfABatchCappedByTheConcurrency() {
        #expect(trigger.threshold == 50)
        #expect(ClaimTrigger(claimBatch: 100, concurrency: 10).threshold == 5)
        // A large batch: claimed whole when that many slots are free, but a busy worker claims at 50.
        let large = ClaimTrigger(claimBatch: 200, concurrency: 1024)
        #expect(large.fullBatch == 200 && large.threshold == ClaimTrigger.busyThresholdLimit)
        #expect(ClaimTrigger(claimBatch: 200, concurrency: 60).threshold == 30)
        #expect(ClaimTrigger(claimBatch: 100, concurrency: 1).threshold == 1)
        #expect(ClaimTrigger(claimBatch: 1, concurrency: 64).threshold == 1)
    }

    @Test func anIdleWorkerClaimsAtOnce() {
        #expect(trigger.decide(free: 256, held: 0, backlogged: false, moreWaiting: false, freeSince: nil, now: t0) == .claim)
    }

    @Test func aBusyWorkerWaitsForTheThreshold() {
        #expect(trigger.decide(free: 49, held: 207, backlogged: false, moreWaiting: false, freeSince: t0, now: t0 + .seconds(5)) == .sleep)
        #expect(trigger.decide(free: 50, held: 206, backlogged: false, moreWaiting: false, freeSince: t0, now: t0) == .claim)
    }

    @Test func noSlotOrABackloggedCompleterMeansNoClaim() {
        #expect(trigger.decide(free: 0, held: 256, backlogged: false, moreWaiting: false, freeSince: nil, now: t0) == .sleep)
        #expect(trigger.decide(free: 256, held: 0, backlogged: true, moreWaiting: true, freeSince: t0, now: t0) == .sleep)
    }

    @Test func whileJobsWaitAFewFreeSlotsAreFilledOnceTheyLingered() {
        // The last claim came back full: a handful of free slots wait at most the linger.
        #expect(trigger.decide(free: 3, held: 253, backlogged: false, moreWaiting: true, freeSince: t0,
                               now: t0 + .milliseconds(20)) == .wait(.milliseconds(30)))
        #expect(trigger.decide(free: 3, held: 253, backlogged: false, moreWaiting: true, freeSince: t0,
                               now: t0 + .milliseconds(50)) == .claim)
        // No slot free yet (or not seen free yet): look again after a linger.
        #expect(trigger.decide(free: 0, held: 256, backlogged: false, moreWaiting: true, freeSince: nil, now: t0) == .wait(.milliseconds(50)))
        #expect(trigger.decide(free: 2, held: 254, backlogged: false, moreWaiting: true, freeSince: nil, now: t0) == .wait(.milliseconds(50)))
    }

    @Test func aFinishedJobWakesTheClaimerOnlyAtTheThresholdOrWhenIdle() {
        let wakes = (1...256).filter { free in trigger.wakeAfterFinish(free: free, held: 256 - free) }
        // Free slots counting up one finished job at a time: one wake-up at half a batch, one when idle.
        #expect(wakes == [50, 256])
        #expect(ClaimTrigger(claimBatch: 100, concurrency: 1).wakeAfterFinish(free: 1, held: 0))
        #expect(!trigger.wakeAfterFinish(free: 0, held: 256))
    }
}
