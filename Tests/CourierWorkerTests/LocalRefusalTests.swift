@testable import CourierWorker
import Foundation
import Testing

/// The rule for jobs a worker's own configuration cannot run, one case at a time.
struct LocalRefusalTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aJobWithTimeLeftIsHandedBack() {
        #expect(LocalRefusal.decide(deadline: now.addingTimeInterval(3600), createdAt: now, now: now) == .handBack(after: LocalRefusal.handBackDelay))
        #expect(LocalRefusal.decide(deadline: nil, createdAt: now.addingTimeInterval(-3600), now: now) == .handBack(after: LocalRefusal.handBackDelay))
        #expect(LocalRefusal.decide(deadline: nil, createdAt: nil, now: now) == .handBack(after: LocalRefusal.handBackDelay))
    }

    @Test func aJobWhoseDeadlineWouldPassFirstEnds() {
        let decision = LocalRefusal.decide(deadline: now.addingTimeInterval(10), createdAt: now, now: now)
        #expect(decision == .giveUp("no worker could run it before its deadline"))
    }

    @Test func aJobWithoutDeadlineEndsAfterTheMaximumAge() {
        let old = now.addingTimeInterval(-LocalRefusal.maximumAge.timeInterval)
        guard case .giveUp(let why) = LocalRefusal.decide(deadline: nil, createdAt: old, now: now) else {
            Issue.record("expected giveUp")
            return
        }
        #expect(why.contains("1d"), "\(why)")
    }
}
