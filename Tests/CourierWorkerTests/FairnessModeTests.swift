import CourierStore
@testable import CourierWorker
import Testing

/// When a worker claims a queue by fairness key, and when it goes back to the plain claim:
/// the mode's decisions, event by event.
@Suite struct FairnessModeTests {
    let t0 = ContinuousClock.now

    @Test func theFirstProbeIsDueAtOnceAndThenEverySecond() {
        var mode = FairnessMode()
        #expect(mode.probeDue(now: t0))
        mode.probed(queues: ["default"], keyed: [], now: t0)
        #expect(!mode.probeDue(now: t0 + .milliseconds(500)))
        #expect(mode.probeDue(now: t0 + .seconds(1)))
    }

    /// A keyed job's first arrival: jobs were announced and the plain claim found fewer than
    /// asked, so the probe runs at once (after the minimum gap), not a second later.
    @Test func anAnnouncementAndAShortPlainClaimProbeAtOnce() {
        var mode = FairnessMode()
        mode.probed(queues: ["default"], keyed: [], now: t0)
        #expect(!mode.probeDue(now: t0 + .milliseconds(30), plainCameBackShort: true), "no announcement: wait for the interval")
        mode.noteJobsArrived()
        #expect(!mode.probeDue(now: t0 + .milliseconds(30)), "an announcement alone: the plain claim may find the jobs")
        #expect(!mode.probeDue(now: t0 + .milliseconds(10), plainCameBackShort: true), "within the minimum gap")
        #expect(mode.probeDue(now: t0 + .milliseconds(30), plainCameBackShort: true))
    }

    /// Keyed from the probe that finds keyed jobs; plain again only after `linger` without any.
    @Test func aQueueStaysKeyedForTheLingerAfterItsLastKeyedJob() {
        var mode = FairnessMode(linger: .seconds(10))
        mode.probed(queues: ["a", "b"], keyed: ["a"], now: t0)
        #expect(mode.isKeyed("a") && !mode.isKeyed("b"))
        mode.fairClaimed("a", cursor: JobsTable.FairCursor(key: "k", left: 2), now: t0)
        mode.probed(queues: ["a", "b"], keyed: [], now: t0 + .seconds(5))
        #expect(mode.isKeyed("a"), "a trickle a few seconds apart keeps the queue fair")
        #expect(mode.cursor("a") == JobsTable.FairCursor(key: "k", left: 2), "and the round goes on where it was")
        mode.probed(queues: ["a", "b"], keyed: [], now: t0 + .seconds(10))
        #expect(!mode.isKeyed("a"))
        #expect(mode.cursor("a") == .start, "a queue that comes back starts a new round")
    }

    /// A fair claim that took keyed jobs is evidence like a probe's: a trickle claimed as it
    /// arrives keeps its queue keyed though no probe ever sees a job waiting.
    @Test func keyedJobsClaimedKeepTheQueueKeyedWithoutAProbeSeeingThem() {
        var mode = FairnessMode(linger: .seconds(10))
        let position = ClaimPosition(priority: 0, runAtMicroseconds: 1, id: 1)
        mode.probed(queues: ["q"], keyed: ["q"], now: t0)
        mode.fairClaimed("q", cursor: .start, last: ["tenant-1": position], now: t0 + .seconds(8))
        mode.probed(queues: ["q"], keyed: [], now: t0 + .seconds(12))
        #expect(mode.isKeyed("q"), "keyed jobs were claimed 4 s ago")
        mode.fairClaimed("q", cursor: .start, last: ["": position], now: t0 + .seconds(15))
        mode.probed(queues: ["q"], keyed: [], now: t0 + .seconds(19))
        #expect(!mode.isKeyed("q"), "only default-key jobs since: 11 s without a keyed one")
    }

    /// Bounds only for keys with a backlog: a key that gave a whole quantum or was cut short by
    /// the call keeps one; a key that ran dry loses it, so the claim does not visit it for nothing.
    @Test func aKeyThatRanDryKeepsNoBound() {
        var mode = FairnessMode()
        let p = ClaimPosition(priority: 0, runAtMicroseconds: 5, id: 9)
        mode.fairClaimed("q", cursor: JobsTable.FairCursor(key: "cut", left: 4), last: ["flood": p, "trickle": p, "cut": p],
                         claimed: ["flood": 16, "trickle": 1, "cut": 12], quantum: 16, now: t0)
        #expect(Set(mode.bounds("q", now: t0).keys) == ["flood", "cut"])
        mode.fairClaimed("q", cursor: .start, last: ["flood": p], claimed: ["flood": 3], quantum: 16, now: t0 + .seconds(1))
        #expect(Set(mode.bounds("q", now: t0 + .seconds(1)).keys) == ["cut"], "the flood ran dry too: its bound goes")
    }

    /// A queue whose claims serve several keys is claimed in smaller batches for a second, so a
    /// job arriving during a claim waits less; one tenant alone gets full batches.
    @Test func aSharedQueueIsClaimedInSmallerBatches() {
        var mode = FairnessMode()
        let p = ClaimPosition(priority: 0, runAtMicroseconds: 5, id: 9)
        #expect(mode.fairClaimLimit("q", free: 128, now: t0) == 128)
        mode.fairClaimed("q", cursor: .start, last: ["flood": p], claimed: ["flood": 128], quantum: 16, now: t0)
        #expect(mode.fairClaimLimit("q", free: 128, now: t0) == 128, "one key alone")
        mode.fairClaimed("q", cursor: .start, last: ["flood": p, "t1": p], claimed: ["flood": 60, "t1": 1], quantum: 16, now: t0)
        #expect(mode.fairClaimLimit("q", free: 128, now: t0 + .milliseconds(500)) == FairnessMode.sharedClaimLimit)
        #expect(mode.fairClaimLimit("q", free: 10, now: t0 + .milliseconds(500)) == 10)
        #expect(mode.fairClaimLimit("q", free: 128, now: t0 + .seconds(2)) == 128, "a second after the last shared claim")
    }

    /// Where the last claim of each key stopped is kept for 5 s from when it was first set,
    /// then dropped, so every key is claimed from its start again at least that often.
    @Test func boundsAgeOutFromWhenTheyWereFirstSet() {
        var mode = FairnessMode()
        let p1 = ClaimPosition(priority: 0, runAtMicroseconds: 1, id: 1)
        let p2 = ClaimPosition(priority: 0, runAtMicroseconds: 2, id: 2)
        mode.fairClaimed("q", cursor: .start, last: ["k": p1], now: t0)
        mode.fairClaimed("q", cursor: .start, last: ["k": p2, "": p1], now: t0 + .seconds(3))
        #expect(mode.bounds("q", now: t0 + .seconds(4)) == ["k": p2, "": p1])
        #expect(mode.bounds("q", now: t0 + .seconds(5)) == ["": p1], "k's bound was first set at t0: it is dropped at 5 s")
        #expect(mode.bounds("other", now: t0).isEmpty)
    }
}
