import CourierStore
@testable import CourierWorker
import Testing

/// Where the claimer's next plain claim starts: after the last job it took, or from the
/// start of the queue. One event at a time.
@Suite struct ClaimBoundsTests {
    let t0 = ContinuousClock.now
    let p1 = ClaimPosition(priority: 0, runAtMicroseconds: 1_000, id: 10)
    let p2 = ClaimPosition(priority: 0, runAtMicroseconds: 2_000, id: 20)

    @Test func theFirstClaimStartsFromTheStart() {
        #expect(ClaimBounds().start(queue: "q", now: t0) == nil)
    }

    @Test func aFullClaimThatCameBackFullIsFollowedByClaimsFromWhereItStopped() {
        var bounds = ClaimBounds()
        #expect(bounds.record(queue: "q", from: nil, asked: 100, taken: 100, last: p1, startedAt: t0, endedAt: t0) == .carryOn)
        #expect(bounds.start(queue: "q", now: t0 + .milliseconds(10)) == p1)
        #expect(bounds.start(queue: "other", now: t0) == nil)
        // A full claim from the bound moves it on.
        #expect(bounds.record(queue: "q", from: p1, asked: 100, taken: 100, last: p2, startedAt: t0, endedAt: t0) == .carryOn)
        #expect(bounds.start(queue: "q", now: t0 + .milliseconds(20)) == p2)
    }

    @Test func aShortClaimFromTheBoundAsksForAClaimFromTheStartAtOnce() {
        var bounds = ClaimBounds()
        _ = bounds.record(queue: "q", from: nil, asked: 100, taken: 100, last: p1, startedAt: t0, endedAt: t0)
        #expect(bounds.record(queue: "q", from: p1, asked: 100, taken: 3, last: p2, startedAt: t0, endedAt: t0) == .claimFromStart)
        #expect(bounds.start(queue: "q", now: t0) == nil)
    }

    @Test func aShortFullClaimKeepsNoBound() {
        var bounds = ClaimBounds()
        #expect(bounds.record(queue: "q", from: nil, asked: 100, taken: 7, last: p1, startedAt: t0, endedAt: t0) == .carryOn)
        #expect(bounds.start(queue: "q", now: t0) == nil)
    }

    @Test func whileClaimsComeBackFullAClaimFromTheStartRunsEveryInterval() {
        var bounds = ClaimBounds(fullClaimInterval: .seconds(1), costFactor: 20)
        _ = bounds.record(queue: "q", from: nil, asked: 100, taken: 100, last: p1, startedAt: t0, endedAt: t0)
        #expect(bounds.start(queue: "q", now: t0 + .milliseconds(999)) == p1)
        #expect(bounds.start(queue: "q", now: t0 + .seconds(1)) == nil)
    }

    @Test func anExpensiveClaimFromTheStartIsSpacedByItsCost() {
        var bounds = ClaimBounds(fullClaimInterval: .seconds(1), costFactor: 20)
        // It took 200 ms (dead entries walked): the next one is 4 s after it ended, not 1 s.
        let end = t0 + .milliseconds(200)
        _ = bounds.record(queue: "q", from: nil, asked: 100, taken: 100, last: p1, startedAt: t0, endedAt: end)
        #expect(bounds.start(queue: "q", now: end + .seconds(3)) == p1)
        #expect(bounds.start(queue: "q", now: end + .seconds(4)) == nil)
    }

    @Test func aVerySlowClaimFromTheStartIsSpacedNoFurtherThanTheCap() {
        // A 1 s full claim (a long transaction holds vacuum back): 20x would be 20 s; the cap is 5 s.
        var bounds = ClaimBounds(fullClaimInterval: .seconds(1), costFactor: 20)
        let end = t0 + .seconds(1)
        _ = bounds.record(queue: "q", from: nil, asked: 100, taken: 100, last: p1, startedAt: t0, endedAt: end)
        #expect(bounds.start(queue: "q", now: end + .milliseconds(4_999)) == p1)
        #expect(bounds.start(queue: "q", now: end + .seconds(5)) == nil, "a job behind the bound waits at most 5 s after the claim")
        #expect(bounds.spacing(afterFullClaimOf: .seconds(60)) == .seconds(5))
    }

    @Test func theSpacingIsTheIntervalTheCostOrTheCap() {
        let bounds = ClaimBounds(fullClaimInterval: .seconds(1), costFactor: 20, maxSpacing: .seconds(3))
        #expect(bounds.spacing(afterFullClaimOf: .milliseconds(10)) == .seconds(1))
        #expect(bounds.spacing(afterFullClaimOf: .milliseconds(100)) == .seconds(2))
        #expect(bounds.spacing(afterFullClaimOf: .seconds(1)) == .seconds(3))
        // A cap below the interval never spaces claims closer than the interval.
        let tight = ClaimBounds(fullClaimInterval: .seconds(2), costFactor: 20, maxSpacing: .seconds(1))
        #expect(tight.spacing(afterFullClaimOf: .seconds(1)) == .seconds(2))
    }
}
