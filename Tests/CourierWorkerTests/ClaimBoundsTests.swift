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
}
