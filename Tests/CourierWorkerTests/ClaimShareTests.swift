import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// The gated and the plain claim share each round (issue #40, item 4).
@Suite struct ClaimShareTests {
    @Test func anEvenRoundIsSplitInHalvesAndTheOddSlotAlternates() {
        var share = ClaimShare()
        #expect(share.gatedShare(of: 10) == 5)
        #expect(share.gatedShare(of: 10) == 5, "an even round does not move the odd slot's turn")
        #expect(share.gatedShare(of: 1) == 1)
        #expect(share.gatedShare(of: 1) == 0, "one free slot goes to each claim in turn")
        #expect(share.gatedShare(of: 1) == 1)
        #expect(share.gatedShare(of: 7) == 3)
        #expect(share.gatedShare(of: 7) == 4)
        #expect(share.gatedShare(of: 0) == 0)
    }

    @Test func theGatedClaimTopsUpOnlyWhatThePlainClaimLeftAndOnlyAfterAFullShare() {
        #expect(ClaimShare.gatedTopUp(free: 10, gatedShare: 5, gatedTaken: 5, plainTaken: 1) == 4)
        #expect(ClaimShare.gatedTopUp(free: 10, gatedShare: 5, gatedTaken: 3, plainTaken: 1) == 0, "it had less than its share")
        #expect(ClaimShare.gatedTopUp(free: 10, gatedShare: 5, gatedTaken: 5, plainTaken: 5) == 0, "the round is full")
        #expect(ClaimShare.gatedTopUp(free: 1, gatedShare: 0, gatedTaken: 0, plainTaken: 0) == 1, "its turn skipped, nothing plain to take")
    }

    /// The review's case: a destination with a retry budget and nothing else (a policy that
    /// never binds) has a backlog; a priority -100 job of another destination arrives. It
    /// must start in the next round, not after the backlog.
    @Test func aNonBindingPolicysBacklogDoesNotStarveAnUrgentPlainJob() async throws {
        try await WorkerHarness.with { h in
            let other = try FaultServer()
            defer { other.stop() }
            _ = try DestinationsTable.merge(.init(destination: h.server.baseURL, retryBudgetPercent: 50), on: h.db)
            for n in 0..<50 {
                h.server.enqueueBehaviors([.slow(delay: .milliseconds(150), then: .json200)], forPath: "/backlog/\(n)")
                try h.enqueue("/backlog/\(n)")
            }
            try h.start { $0.concurrency = 10 }
            #expect(try await h.eventually { h.server.requestCount() >= 1 }, "the backlog is being sent")
            var urgent = EnqueueRequest(url: other.baseURL + "/urgent")
            urgent.priority = -100
            let id = try JobsTable.enqueue(urgent, on: h.db)
            #expect(try await h.eventually { try h.job(id)?.status == .succeeded })
            let urgentStart = try #require(other.requestSpans.first?.startNanos)
            let backlogStarts = h.server.requestSpans.map(\.startNanos).sorted()
            let before = backlogStarts.filter { $0 < urgentStart }.count
            // Claimed in the round after it arrived: at most two rounds of the backlog started first
            // (the one that was running, and the one claimed meanwhile). Before, all 50 went first.
            #expect(before <= 30, "\(before) of the backlog's 50 requests started before the urgent job")
            #expect(before < 50)
        }
    }
}
