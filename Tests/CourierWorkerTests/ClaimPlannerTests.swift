@testable import CourierWorker
import Testing

/// Fair claiming across destinations without a policy: the planner's decisions, event by event.
@Suite struct ClaimPlannerTests {
    let t0 = ContinuousClock.now

    func full(_ destination: String, _ n: Int, plus others: [String] = []) -> [String] {
        Array(repeating: destination, count: n - others.count) + others
    }

    @Test func oneDestinationWithRoomClaimsPlainOnly() {
        let planner = ClaimPlanner(concurrency: 256)
        #expect(planner.reserve == 16)
        #expect(planner.plan(.init(free: 100), now: t0) == [.plain(limit: 100)])
        #expect(planner.plan(.init(free: 100, busiest: ("a", 100)), now: t0) == [.plain(limit: 100)])
        #expect(planner.plan(.init(free: 0, busiest: ("a", 256)), now: t0) == [])
    }

    @Test func aFullBatchDominatedByOneDestinationBringsSpreadClaimsThatExcludeIt() {
        var planner = ClaimPlanner(concurrency: 256)
        planner.plainClaimed(limit: 100, destinations: full("a", 100, plus: Array(repeating: "b", count: 9)))
        #expect(planner.dominant == "a")
        #expect(planner.plan(.init(free: 100, busiest: ("a", 91)), now: t0)
            == [.spread(limit: 100, perDestination: 12, after: nil, excluding: ["a"]), .plain(limit: 100)])
        // The cursor moves to the last destination a spread claim took from.
        planner.spreadClaimed(limit: 100, destinations: ["b", "b", "c"], now: t0)
        #expect(planner.cursor == "c")
        #expect(planner.plan(.init(free: 10), now: t0) == [.spread(limit: 10, perDestination: 1, after: "c", excluding: ["a"]),
                                                           .plain(limit: 10)])
    }

    @Test func aBatchThatIsNotFullOrIsMixedEndsTheDominance() {
        var planner = ClaimPlanner(concurrency: 256)
        planner.plainClaimed(limit: 100, destinations: full("a", 100))
        #expect(planner.dominant == "a")
        planner.plainClaimed(limit: 100, destinations: full("a", 99))
        #expect(planner.dominant == nil)
        planner.plainClaimed(limit: 100, destinations: full("a", 100, plus: Array(repeating: "b", count: 11)))
        #expect(planner.dominant == nil)
        #expect(planner.plan(.init(free: 100), now: t0) == [.plain(limit: 100)])
    }

    @Test func aDestinationAtItsShareLeavesTheReserveToSpreadClaims() {
        let planner = ClaimPlanner(concurrency: 32)
        #expect(planner.reserve == 2)
        #expect(planner.share == 30)
        // Holding 30 of 32: the two free slots only for other destinations.
        #expect(planner.plan(.init(free: 2, busiest: ("slow", 30)), now: t0)
            == [.spread(limit: 2, perDestination: 1, after: nil, excluding: ["slow"])])
        // Holding 20 with 12 free: 10 more for anyone through the plain claim, all 12 offered to the others first.
        #expect(planner.plan(.init(free: 12, busiest: ("slow", 20)), now: t0)
            == [.spread(limit: 12, perDestination: 1, after: nil, excluding: ["slow"]), .plain(limit: 10)])
        // An empty worker: the plain claim for the share; the reserve waits for the others.
        #expect(planner.plan(.init(free: 32), now: t0) == [.plain(limit: 30)])
    }

    @Test func fewSlotsHaveNoReserve() {
        let planner = ClaimPlanner(concurrency: 3)
        #expect(planner.reserve == 0)
        #expect(planner.plan(.init(free: 1, busiest: ("slow", 2)), now: t0) == [.plain(limit: 1)])
    }

    @Test func anEmptySpreadClaimWaitsForAnAnnouncementOrTheQuietRecheck() {
        var planner = ClaimPlanner(concurrency: 32, minimumGap: .milliseconds(20), quietRecheck: .seconds(1))
        let atShare = ClaimPlanner.Holding(free: 2, busiest: ("slow", 30))
        planner.spreadClaimed(limit: 2, destinations: [], now: t0)
        #expect(planner.plan(atShare, now: t0 + .milliseconds(500)) == [])
        #expect(planner.spreadRecheck(now: t0 + .milliseconds(500)) == .milliseconds(500))
        // Announced jobs: again after the minimum gap.
        planner.noteJobsArrived()
        #expect(planner.plan(atShare, now: t0 + .milliseconds(10)) == [])
        #expect(planner.spreadRecheck(now: t0 + .milliseconds(10)) == .milliseconds(10))
        #expect(planner.plan(atShare, now: t0 + .milliseconds(20)).count == 1)
        #expect(planner.spreadRecheck(now: t0 + .milliseconds(20)) == nil)
        // Found nothing again, no announcement: the quiet recheck.
        planner.spreadClaimed(limit: 2, destinations: [], now: t0 + .seconds(2))
        #expect(planner.plan(atShare, now: t0 + .seconds(2) + .milliseconds(999)) == [])
        #expect(planner.plan(atShare, now: t0 + .seconds(3)).count == 1)
        // One that found jobs lifts the hold at once.
        planner.spreadClaimed(limit: 2, destinations: ["b"], now: t0 + .seconds(3))
        #expect(planner.spreadRecheck(now: t0 + .seconds(3)) == nil)
        #expect(planner.plan(atShare, now: t0 + .seconds(3)).count == 1)
    }

    @Test func aHeldBackSpreadStillLetsThePlainClaimRun() {
        var planner = ClaimPlanner(concurrency: 256)
        planner.plainClaimed(limit: 100, destinations: full("a", 100))
        planner.spreadClaimed(limit: 100, destinations: [], now: t0)
        #expect(planner.plan(.init(free: 100), now: t0 + .milliseconds(5)) == [.plain(limit: 100)])
    }
}
