import CourierCore
import Foundation
import Testing

/// Issue 43 item 1: what counts as evidence against a destination. A job's timeout is its
/// enqueuer's choice, so a timeout within a too-short job timeout says nothing about the
/// destination that other tenants share.
@Suite struct BreakerEvidenceFloorTests {
    let policy = BreakerPolicy()

    func classified(_ outcome: TransportOutcome) -> Classification {
        OutcomeClassifier.classify(outcome, expectContentType: nil, now: Date(timeIntervalSince1970: 0))
    }

    @Test func aTimeoutWithinAJobTimeoutBelowTheFloorIsNoEvidence() {
        for connected in [false, true] {
            let timeout = classified(.timedOut(connected: connected, "1 ms"))
            #expect(!policy.isEvidence(timeout, jobTimeout: .milliseconds(1)))
            #expect(!policy.isEvidence(timeout, jobTimeout: .milliseconds(999)))
            #expect(policy.isEvidence(timeout, jobTimeout: .seconds(1)), "at the floor a timeout counts")
            #expect(policy.isEvidence(timeout, jobTimeout: .seconds(30)))
        }
    }

    @Test func otherFailuresAndSuccessesDoNotDependOnTheJobTimeout() {
        let refused = classified(.notSent("connection refused"))
        let lost = classified(.connectionLost("reset"))
        let ok = classified(.response(HTTPResponseSummary(status: 200)))
        let clientError = classified(.response(HTTPResponseSummary(status: 404)))
        for jobTimeout in [Duration.milliseconds(1), .seconds(30)] {
            #expect(policy.isEvidence(refused, jobTimeout: jobTimeout))
            #expect(policy.isEvidence(lost, jobTimeout: jobTimeout))
            #expect(policy.isEvidence(ok, jobTimeout: jobTimeout))
            #expect(!policy.isEvidence(clientError, jobTimeout: jobTimeout), "a 404 is the job's, never the destination's")
        }
    }

    @Test func theFloorIsSetByItsFlagAndZeroCountsEveryTimeout() throws {
        var everything = BreakerPolicy()
        everything.timeoutEvidenceFloor = .zero
        #expect(everything.isEvidence(classified(.timedOut(connected: true, "")), jobTimeout: .milliseconds(1)))
        var negative = BreakerPolicy()
        negative.timeoutEvidenceFloor = .milliseconds(-1)
        #expect(throws: ValidationError.self) { try negative.validate() }
    }
}
