@testable import CourierWorker
import Testing

/// When the claimer looks again for jobs it knows fall due: one event at a time.
@Suite struct ClaimRecheckTests {
    let t0 = ContinuousClock.now
    let poll = Duration.seconds(1)

    @Test func withNothingDueTheClaimerWaitsThePollInterval() {
        var recheck = ClaimRecheck()
        let waited = recheck.wait(afterRoundAt: t0, pollInterval: poll)
        #expect(waited == poll)
    }

    @Test func aDueTimeAheadIsWaitedForWithTheSlack() {
        var recheck = ClaimRecheck()
        recheck.note(due: t0 + .milliseconds(25))
        let waited = recheck.wait(afterRoundAt: t0, pollInterval: poll)
        #expect(waited == .milliseconds(25) + ClaimRecheck.slack)
        // Still due: a round before it leaves it in place.
        #expect(recheck.due == t0 + .milliseconds(25))
    }

    @Test func theEarliestDueTimeWins() {
        var recheck = ClaimRecheck()
        recheck.note(due: t0 + .milliseconds(300))
        recheck.note(due: t0 + .milliseconds(25))
        recheck.note(due: t0 + .milliseconds(900))
        #expect(recheck.due == t0 + .milliseconds(25))
    }

    /// The round that began at or after the due time has looked: the due time is spent, and
    /// the claimer waits the poll interval rather than running one more round right away
    /// (each NOTIFY cost a third, empty claim 1 ms after its follow-up claim before).
    @Test func aRoundAtOrAfterTheDueTimeSpendsIt() {
        var recheck = ClaimRecheck()
        recheck.note(due: t0 + .milliseconds(25))
        let waited = recheck.wait(afterRoundAt: t0 + .milliseconds(30), pollInterval: poll)
        #expect(waited == poll)
        #expect(recheck.due == nil)
        recheck.note(due: t0 + .milliseconds(40))
        let waitedAgain = recheck.wait(afterRoundAt: t0 + .milliseconds(40), pollInterval: poll)
        #expect(waitedAgain == poll)
        #expect(recheck.due == nil)
    }

    @Test func aDueTimeBeyondThePollIntervalWaitsOnlyThePollInterval() {
        var recheck = ClaimRecheck()
        recheck.note(due: t0 + .seconds(30))
        let waited = recheck.wait(afterRoundAt: t0, pollInterval: poll)
        #expect(waited == poll)
        #expect(recheck.due == t0 + .seconds(30))
    }
}
