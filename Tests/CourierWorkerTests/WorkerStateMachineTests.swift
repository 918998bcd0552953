import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The worker's state machine, one event at a time.
@Suite struct WorkerStateMachineTests {
    typealias Lease = WorkerStateMachine.Lease
    let t0 = ContinuousClock.now

    func job(_ id: Int64, attempt: Int = 1) -> ClaimedJob { ClaimedJob.testJob(id: id, attempt: attempt) }

    @Test func claimedJobsTakeSlotsAndFinishingFreesThem() {
        var machine = WorkerStateMachine(concurrency: 3)
        #expect(machine.freeSlots == 3)
        #expect(machine.claimed([job(1), job(2)]) == .start([Lease(id: 1, token: 1), Lease(id: 2, token: 1)]))
        #expect(machine.freeSlots == 1)
        #expect(machine.started(Lease(id: 1, token: 1)) == .run)
        #expect(machine.jobs[Lease(id: 1, token: 1)]?.started == true)
        let (entry, actions) = machine.finished(Lease(id: 1, token: 1))
        #expect(entry?.job.id == 1)
        #expect(actions.isEmpty)
        #expect(machine.freeSlots == 2)
        #expect(machine.started(Lease(id: 1, token: 1)) == .ignore)
    }

    /// Starting hands the task its job and the entry's marks (a probe's generation, a cancel
    /// asked before the start); a shutdown hands them back with `.handBack`; a lease no longer
    /// held gives nothing.
    @Test func startingGivesTheJobAndItsMarks() {
        var machine = WorkerStateMachine(concurrency: 4)
        _ = machine.claimed([job(1)])
        _ = machine.claimed([job(2)], probeGeneration: 7)
        _ = machine.cancelRequested(ids: [1])
        let first = machine.starting(Lease(id: 1, token: 1))
        #expect(first.action == .run)
        #expect(first.job?.id == 1)
        #expect(first.marks == WorkerStateMachine.Marks(cancelledByOperator: true, abortedByShutdown: false,
                                                        abortedByFence: false, probeGeneration: nil))
        _ = machine.shutdownRequested(now: t0, grace: .seconds(5))
        let probe = machine.starting(Lease(id: 2, token: 1))
        #expect(probe.action == .handBack)
        #expect(probe.job?.id == 2)
        #expect(probe.marks?.probeGeneration == 7)
        #expect(machine.jobs[Lease(id: 2, token: 1)]?.started == false)
        let gone = machine.starting(Lease(id: 3, token: 1))
        #expect(gone.action == .ignore && gone.job == nil && gone.marks == nil)
    }

    /// The per-destination counts follow claims and finishes; the busiest destination is
    /// the one holding most (ties: the first in text order); nothing held, none.
    @Test func theBusiestDestinationFollowsClaimsAndFinishes() {
        func job(_ id: Int64, _ destination: String) -> ClaimedJob {
            ClaimedJob(id: id, attempt: 1, destination: destination, method: "GET", url: destination + "/")
        }
        let (a, b) = ("http://a.test:80", "http://b.test:80")
        var machine = WorkerStateMachine(concurrency: 8)
        #expect(machine.busiestDestination == nil)
        _ = machine.claimed([job(1, b), job(2, a), job(3, b)])
        #expect(machine.busiestDestination.map { [$0.destination: $0.count] } == [b: 2])
        _ = machine.finished(Lease(id: 1, token: 1))
        #expect(machine.busiestDestination.map { [$0.destination: $0.count] } == [a: 1])
        _ = machine.finished(Lease(id: 1, token: 1))   // finished twice: counted once
        #expect(machine.heldPerDestination == [a: 1, b: 1])
        _ = machine.finished(Lease(id: 2, token: 1))
        _ = machine.finished(Lease(id: 3, token: 1))
        #expect(machine.busiestDestination == nil)
        #expect(machine.heldPerDestination.isEmpty)
    }

    @Test func aLaterAttemptOfTheSameJobDoesNotOverwriteTheLiveOne() {
        var machine = WorkerStateMachine(concurrency: 4)
        _ = machine.claimed([job(7, attempt: 1)])
        _ = machine.claimed([job(7, attempt: 2)])
        #expect(machine.jobs.count == 2)
        _ = machine.finished(Lease(id: 7, token: 1))
        #expect(machine.jobs[Lease(id: 7, token: 2)] != nil)
    }

    @Test func cancellationMarksHeldJobsOnceAndIgnoresOthers() {
        var machine = WorkerStateMachine(concurrency: 4)
        _ = machine.claimed([job(1), job(2)])
        #expect(machine.cancelRequested(ids: [2, 99]) == [.cancel([Lease(id: 2, token: 1)])])
        #expect(machine.jobs[Lease(id: 2, token: 1)]?.cancelledByOperator == true)
        #expect(machine.cancelRequested(ids: [2]).isEmpty, "a second request for the same job aborts nothing new")
        #expect(machine.cancelRequested(ids: [99]).isEmpty)
    }

    /// A job's marks follow what happened to it while it ran, as its entry has them.
    @Test func marksFollowCancellationAndProbe() {
        var machine = WorkerStateMachine(concurrency: 4)
        _ = machine.claimed([job(1)])
        _ = machine.claimed([job(2)], probeGeneration: 7)
        let plain = Lease(id: 1, token: 1), probe = Lease(id: 2, token: 1)
        #expect(machine.marks(of: plain) == .init(cancelledByOperator: false, abortedByShutdown: false, abortedByFence: false))
        _ = machine.cancelRequested(ids: [1])
        #expect(machine.marks(of: plain)?.cancelledByOperator == true)
        #expect(machine.marks(of: probe)?.probeGeneration == 7 && machine.marks(of: probe)?.cancelledByOperator == false)
        _ = machine.finished(plain)
        #expect(machine.marks(of: plain) == nil)
    }

    @Test func shutdownWithNothingHeldFlushesAtOnce() {
        var machine = WorkerStateMachine(concurrency: 2)
        #expect(machine.shutdownRequested(now: t0, grace: .seconds(5)) == [.stopClaiming, .flush])
        #expect(machine.phase == .flushing)
        #expect(machine.freeSlots == 0)
        #expect(machine.shutdownRequested(now: t0, grace: .seconds(5)).isEmpty, "a second request changes nothing")
    }

    @Test func shutdownDrainsStartedJobsAndHandsBackUnstartedOnes() {
        var machine = WorkerStateMachine(concurrency: 4)
        _ = machine.claimed([job(1), job(2)])
        #expect(machine.started(Lease(id: 1, token: 1)) == .run)
        #expect(machine.shutdownRequested(now: t0, grace: .seconds(5)) == [.stopClaiming])
        #expect(machine.phase == .draining(deadline: t0 + .seconds(5)))
        #expect(machine.started(Lease(id: 2, token: 1)) == .handBack)
        #expect(machine.finished(Lease(id: 2, token: 1)).actions.isEmpty)
        // A claim that returns after the shutdown began gives its jobs back.
        #expect(machine.claimed([job(3)]) == .handBack([Lease(id: 3, token: 1)]))
        #expect(machine.tick(now: t0 + .seconds(1)).isEmpty)
        #expect(machine.finished(Lease(id: 1, token: 1)).actions == [.flush])
        #expect(machine.phase == .flushing)
    }

    @Test func jobsStillRunningAtTheDeadlineAreAbortedThenFlushedWithout() {
        var machine = WorkerStateMachine(concurrency: 4, abortGrace: .seconds(2))
        _ = machine.claimed([job(1), job(2)])
        _ = machine.started(Lease(id: 1, token: 1))
        _ = machine.started(Lease(id: 2, token: 1))
        _ = machine.shutdownRequested(now: t0, grace: .seconds(5))
        #expect(machine.tick(now: t0 + .seconds(5)) == [.abort([Lease(id: 1, token: 1), Lease(id: 2, token: 1)])])
        #expect(machine.phase == .aborting(deadline: t0 + .seconds(7)))
        #expect(machine.jobs.values.allSatisfy { $0.abortedByShutdown })
        #expect(machine.finished(Lease(id: 1, token: 1)).actions.isEmpty)
        // One job ignores its abort: the worker flushes without it once the abort grace is over.
        #expect(machine.tick(now: t0 + .seconds(6)).isEmpty)
        #expect(machine.tick(now: t0 + .seconds(7)) == [.flush])
        #expect(machine.phase == .flushing)
        machine.stopped()
        #expect(machine.phase == .stopped)
    }

    @Test func theNextDeadlineFollowsThePhase() {
        var machine = WorkerStateMachine(concurrency: 1, abortGrace: .seconds(1))
        #expect(machine.nextDeadline == nil)
        _ = machine.claimed([job(1)])
        _ = machine.started(Lease(id: 1, token: 1))
        _ = machine.shutdownRequested(now: t0, grace: .seconds(3))
        #expect(machine.nextDeadline == t0 + .seconds(3))
        _ = machine.tick(now: t0 + .seconds(3))
        #expect(machine.nextDeadline == t0 + .seconds(4))
    }
}

extension ClaimedJob {
    static func testJob(id: Int64, attempt: Int) -> ClaimedJob {
        ClaimedJob(id: id, attempt: attempt, destination: "http://127.0.0.1:1", method: "GET", url: "http://127.0.0.1:1/")
    }
}
