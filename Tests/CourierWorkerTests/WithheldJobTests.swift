import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// Issue 12, item 10: a job claimed before its destination was held back, and still waiting
/// for a connection to the host, is not sent: it goes back to the queue without using an attempt.
@Suite struct HeldBackDestinationsTests {
    @Test func onlyAReadSentAfterTheJobBeganWithholdsIt() {
        let clock = ManualClock()
        let held = HeldBackDestinations(now: { clock.now })
        let destination = "https://partner.example"
        let before = clock.now
        clock.advance(.milliseconds(10))
        let began = clock.now
        // A read sent before the job began: the claim, later, found the destination free.
        held.update([destination], sentAt: before)
        #expect(held.isHeldBack(destination))
        #expect(!held.withholds(destination, began: began))
        // A read sent after it began and finding it held back withholds it; other destinations go on.
        clock.advance(.milliseconds(10))
        held.update([destination], sentAt: clock.now)
        #expect(held.withholds(destination, began: began))
        #expect(!held.withholds("https://other.example", began: began))
        // A later read that finds it free again lets it go.
        clock.advance(.milliseconds(10))
        held.update([], sentAt: clock.now)
        #expect(!held.withholds(destination, began: began))
        #expect(!held.isHeldBack(destination))
    }

    @Test func aSendCheckRemembersWhenItsJobBegan() {
        let clock = ManualClock()
        let held = HeldBackDestinations(now: { clock.now })
        let destination = "https://partner.example"
        held.update([destination], sentAt: clock.now)
        clock.advance(.milliseconds(5))
        let check = held.sendCheck(for: destination)
        #expect(check(), "the only read predates the job: send")
        clock.advance(.milliseconds(5))
        held.update([destination], sentAt: clock.now)
        #expect(!check(), "a read after the job began found its destination held back: withhold")
    }
}

@Suite(.serialized) struct WithheldJobTests {
    @Test func jobsWaitingForAConnectionWhenTheBreakerOpensAreHandedBackUnsent() async throws {
        try await WorkerHarness.with { h in
            let destination = "http://127.0.0.1:\(h.server.port)"
            h.server.setBehavior(.holdUntilReleased(then: .json200), forPath: "/first")
            let first = try h.enqueue("/first")
            // One connection per host: the first job's request holds it, the others wait inside libcurl.
            try h.start(maxHostConnections: 1)
            #expect(try await h.waitForRequests(1, path: "/first"))
            let later = try (0..<2).map { _ in try h.enqueue("/later") }
            let claimed = try await h.eventually {
                try later.allSatisfy { try h.status($0) == .running }
            }
            #expect(claimed, "the later jobs are claimed and wait for the connection")

            // An operator opens the breaker while they wait; the worker's next read sees it.
            #expect(try BreakersTable.force(destination: destination, action: .open, on: h.db) == "closed", "the state it left")
            #expect(try await h.eventually { h.worker.heldBack.isHeldBack(destination) })
            h.server.releaseHolds()

            _ = try await h.waitFor(first, .succeeded)
            let handedBack = try await h.eventually {
                try h.db.query("""
                    select count(*)::int from courier.jobs
                    where id = any(\(later)) and state = 'available' and attempt = 0
                    """).rows[0].decode(0, as: Int.self) == later.count
            }
            #expect(handedBack, "withheld jobs go back to the queue without using an attempt")
            #expect(h.server.requestCount(path: "/later") == 0, "nothing was sent to the held-back destination")
            #expect(h.worker.metrics.snapshot().withheld == later.count)
            let attempts = try h.db.query("""
                select count(*)::int from courier.completed_jobs where id = any(\(later))
                """).rows[0].decode(0, as: Int.self)
            #expect(attempts == 0)
        }
    }
}
