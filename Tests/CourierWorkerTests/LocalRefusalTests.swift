@testable import CourierWorker
import Foundation
import Testing

/// The rule for jobs a worker's own configuration cannot run, one case at a time.
struct LocalRefusalTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aJobWithTimeLeftIsHandedBack() {
        let back = LocalRefusal.Decision.handBack(after: LocalRefusal.handBackDelay)
        #expect(LocalRefusal.decide(deadline: now.addingTimeInterval(3600), refusedSince: nil, refusals: 0, now: now) == back)
        #expect(LocalRefusal.decide(deadline: nil, refusedSince: now.addingTimeInterval(-3599), refusals: 100, now: now) == back)
        #expect(LocalRefusal.decide(deadline: nil, refusedSince: nil, refusals: 0, now: now) == back)
    }

    @Test func aJobWhoseDeadlineWouldPassFirstEnds() {
        let decision = LocalRefusal.decide(deadline: now.addingTimeInterval(10), refusedSince: nil, refusals: 0, now: now)
        #expect(decision == .giveUp("no worker could run it before its deadline"))
    }

    @Test func aRunOfRefusalsEndsAfterAnHour() {
        let first = now.addingTimeInterval(-LocalRefusal.maximumRun.timeInterval)
        guard case .giveUp(let why) = LocalRefusal.decide(deadline: nil, refusedSince: first, refusals: 5, now: now) else {
            Issue.record("expected giveUp")
            return
        }
        #expect(why.contains("1h") && why.contains("6 refusals"), "\(why)")
    }

    @Test func aRunOfRefusalsEndsAtTheSetCount() {
        let recent = now.addingTimeInterval(-60)
        #expect(LocalRefusal.decide(deadline: nil, refusedSince: recent, refusals: LocalRefusal.maximumRefusals - 2, now: now)
                == .handBack(after: LocalRefusal.handBackDelay))
        #expect(LocalRefusal.decide(deadline: nil, refusedSince: recent, refusals: LocalRefusal.maximumRefusals - 1, now: now)
                == .giveUp("no worker could run it in \(LocalRefusal.maximumRefusals) tries"))
    }
}

/// When refusals make a worker degraded: many jobs, or most claims, never one job.
struct RefusalLedgerTests {
    let start = ContinuousClock.now

    @Test func oneJobRefusedAgainAndAgainNeverDegradesTheWorker() {
        var ledger = RefusalLedger()
        for round in 0..<200 {
            ledger.noteRefusal(job: 7, message: "no secret NOPE", attemptsSoFar: 0, at: start + .seconds(round))
        }
        #expect(ledger.degradedReason(attemptsSoFar: 0, at: start + .seconds(200)) == nil)
    }

    @Test func manyDifferentJobsDegradeIt() {
        var ledger = RefusalLedger()
        for job in 1...Int64(RefusalLedger.manyJobs - 1) {
            ledger.noteRefusal(job: job, message: "private address", attemptsSoFar: 1_000, at: start + .seconds(Int(job)))
        }
        #expect(ledger.degradedReason(attemptsSoFar: 10_000, at: start + .seconds(20)) == nil, "9 jobs among many attempts")
        ledger.noteRefusal(job: 99, message: "private address", attemptsSoFar: 10_000, at: start + .seconds(21))
        let reason = ledger.degradedReason(attemptsSoFar: 10_000, at: start + .seconds(22))
        #expect(reason?.hasPrefix("10 jobs refused in the last 5m; the last: private address") == true, "\(reason ?? "nil")")
        // Five minutes later they have left the window.
        #expect(ledger.degradedReason(attemptsSoFar: 10_000, at: start + .seconds(22 + 301)) == nil)
    }

    @Test func mostClaimsRefusedDegradeItOnceAFewJobsAreRefused() {
        var ledger = RefusalLedger()
        _ = ledger.degradedReason(attemptsSoFar: 100, at: start)
        ledger.noteRefusal(job: 1, message: "m", attemptsSoFar: 100, at: start + .seconds(1))
        ledger.noteRefusal(job: 2, message: "m", attemptsSoFar: 101, at: start + .seconds(2))
        #expect(ledger.degradedReason(attemptsSoFar: 101, at: start + .seconds(3)) == nil, "two jobs are too few")
        ledger.noteRefusal(job: 3, message: "m", attemptsSoFar: 101, at: start + .seconds(4))
        #expect(ledger.degradedReason(attemptsSoFar: 101, at: start + .seconds(5))?.contains("3 of the last 4 claims") == true)
        // The same three refusals among many attempts are not most claims.
        #expect(ledger.degradedReason(attemptsSoFar: 200, at: start + .seconds(6)) == nil)
    }
}
