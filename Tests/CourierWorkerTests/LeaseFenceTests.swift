import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The lease fence (DESIGN.md invariant 9), as a value and through the state machine.
@Suite struct LeaseFenceTests {
    typealias Lease = WorkerStateMachine.Lease
    let t0 = ContinuousClock.now

    func job(_ id: Int64, attempt: Int = 1) -> ClaimedJob { ClaimedJob.testJob(id: id, attempt: attempt) }

    @Test func theDefaultMarginIsAFifthOfTheLeaseWithinBounds() {
        #expect(LeaseFence.defaultMargin(lease: .seconds(30)) == .seconds(6))
        #expect(LeaseFence.defaultMargin(lease: .seconds(1)) == .milliseconds(200))
        #expect(LeaseFence.defaultMargin(lease: .seconds(600)) == .seconds(10))
        #expect(LeaseFence(lease: .seconds(30)).trustedFor == .seconds(24))
        #expect(LeaseFence(lease: .seconds(4), margin: .seconds(3)).margin == .seconds(2), "the margin never exceeds half the lease")
    }

    @Test func claimingWaitsForTheFirstRenewalAndStopsOnceTheLastIsTooOld() {
        var fence = LeaseFence(lease: .seconds(10))
        #expect(!fence.mayClaim(now: t0), "a worker that never reached the database claims nothing")
        fence.renewed(sentAt: t0)
        #expect(fence.mayClaim(now: t0 + .seconds(7)))
        #expect(!fence.mayClaim(now: t0 + .seconds(8)), "8 s = lease 10 s - margin 2 s")
        fence.renewed(sentAt: t0 + .seconds(9))
        #expect(fence.mayClaim(now: t0 + .seconds(9)))
        fence.renewed(sentAt: t0 + .seconds(1))
        #expect(fence.lastRenewal == t0 + .seconds(9), "an older proof arriving late does not move the fence back")
    }

    @Test func aLeaseIsTrustedForTheLeaseLessTheMarginFromItsProof() {
        let fence = LeaseFence(lease: .seconds(10), margin: .seconds(3))
        #expect(!fence.isUntrusted(provenAt: t0, now: t0 + .milliseconds(6_999)))
        #expect(fence.isUntrusted(provenAt: t0, now: t0 + .seconds(7)))
        #expect(fence.deadline(provenAt: t0) == t0 + .seconds(7))
    }

    /// The worker wakes its supervisor for a claim only when the new leases stop being
    /// trusted before the supervisor's next look anyway (at most a second away).
    @Test func onlyLeasesTrustedForLessThanTheWindowExpireWithinIt() {
        let usual = LeaseFence(lease: .seconds(30))
        #expect(!usual.expires(provenAt: t0, within: .seconds(1), of: t0))
        #expect(usual.expires(provenAt: t0, within: .seconds(1), of: t0 + .seconds(23) + .milliseconds(500)))
        let short = LeaseFence(lease: .milliseconds(900), margin: .milliseconds(200))
        #expect(short.expires(provenAt: t0, within: .seconds(1), of: t0))
    }

    @Test func theMachineAbortsUnprovenLeasesOnceAndKeepsRenewedOnes() {
        var machine = WorkerStateMachine(concurrency: 4, fence: LeaseFence(lease: .seconds(10)))
        _ = machine.leasesRenewed([], sentAt: t0, now: t0)
        #expect(machine.claimed([job(1), job(2)], provenAt: t0, now: t0) == .start([Lease(id: 1, token: 1), Lease(id: 2, token: 1)]))
        #expect(machine.nextFenceDeadline == t0 + .seconds(8))
        // A renewal at 5 s proves job 1 only (job 2's lease was lost).
        #expect(machine.leasesRenewed([Lease(id: 1, token: 1)], sentAt: t0 + .seconds(5), now: t0 + .seconds(5)) == false)
        #expect(machine.fenceCheck(now: t0 + .seconds(7)).isEmpty)
        #expect(machine.fenceCheck(now: t0 + .seconds(8)) == [.fence([Lease(id: 2, token: 1)])])
        #expect(machine.jobs[Lease(id: 2, token: 1)]?.abortedByFence == true)
        #expect(machine.fenceCheck(now: t0 + .seconds(9)).isEmpty, "each lease is aborted once")
        #expect(machine.nextFenceDeadline == t0 + .seconds(13))
        #expect(machine.fenceCheck(now: t0 + .seconds(13)) == [.fence([Lease(id: 1, token: 1)])])
    }

    @Test func nothingIsClaimableWhileFencedAndClaimingResumesWithTheNextRenewal() {
        var machine = WorkerStateMachine(concurrency: 4, fence: LeaseFence(lease: .seconds(10)))
        #expect(machine.claimableSlots(now: t0) == 0, "before the first renewal")
        let opened = machine.leasesRenewed([], sentAt: t0, now: t0)
        #expect(opened, "the first renewal opens the fence")
        #expect(machine.claimableSlots(now: t0 + .seconds(1)) == 4)
        #expect(machine.claimableSlots(now: t0 + .seconds(8)) == 0, "no renewal for lease - margin")
        let resumed = machine.leasesRenewed([], sentAt: t0 + .seconds(20), now: t0 + .seconds(20))
        #expect(resumed, "resumes: the claimer is woken")
        #expect(machine.claimableSlots(now: t0 + .seconds(20)) == 4)
        #expect(machine.leasesRenewed([], sentAt: t0 + .seconds(21), now: t0 + .seconds(21)) == false)
    }

    @Test func aClaimAnsweredTooLateIsHandedBackAndAFencedJobNeverStarts() {
        var machine = WorkerStateMachine(concurrency: 4, fence: LeaseFence(lease: .seconds(10)))
        _ = machine.leasesRenewed([], sentAt: t0, now: t0)
        // The claim was sent at t0 but its answer came after the leases stopped being trusted.
        #expect(machine.claimed([job(1)], provenAt: t0, now: t0 + .seconds(8)) == .handBack([Lease(id: 1, token: 1)]))
        #expect(machine.jobs.isEmpty)
        _ = machine.claimed([job(2)], provenAt: t0 + .seconds(1), now: t0 + .seconds(1))
        _ = machine.fenceCheck(now: t0 + .seconds(9))
        #expect(machine.started(Lease(id: 2, token: 1)) == .handBack, "fenced before it started: back unstarted")
    }
}
