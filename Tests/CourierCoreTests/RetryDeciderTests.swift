import CourierCore
import Foundation
import Testing

@Suite struct RetryDeciderTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    /// No jitter, so delays are exact: 1s, 2s, 4s, ...
    let policy = RetryPolicy(backoff: BackoffPolicy(base: .seconds(1), cap: .seconds(60), jitter: .none), retryAfterCap: .seconds(30))

    func classify(_ outcome: TransportOutcome, expect: String? = nil) -> Classification {
        OutcomeClassifier.classify(outcome, expectContentType: expect, now: now)
    }

    func status(_ code: Int, _ headers: [HTTPHeader] = []) -> TransportOutcome {
        .response(HTTPResponseSummary(status: code, headers: headers))
    }

    func decide(_ c: Classification, method: String = "POST", key: Bool = false, attempt: Int = 1, max: Int = 5,
                deadline: Date? = nil, previous: Duration? = nil, policy: RetryPolicy? = nil,
                interruption: RetryDecider.Interruption? = nil) -> JobDecision {
        var rng = SplitMix64(seed: 5)
        return RetryDecider.decide(
            c, job: JobRetryFacts(method: method, hasIdempotencyKey: key, attempt: attempt, maxAttempts: max, deadline: deadline, previousDelay: previous),
            policy: policy ?? self.policy, now: now, interruption: interruption, rng: &rng)
    }

    @Test func anOperatorsCancelDeadLettersAsCancelledWhateverTheOutcome() {
        let aborted = classify(.cancelled(maybeSent: true))
        #expect(decide(aborted, method: "GET", key: true, interruption: .cancelledByOperator) == .deadLetter(.cancelled))
        #expect(decide(classify(status(500)), method: "GET", key: true, interruption: .cancelledByOperator) == .deadLetter(.cancelled))
        #expect(decide(classify(status(200)), interruption: .cancelledByOperator) == .succeed, "a request that succeeded before the cancel landed succeeded")
    }

    @Test func anAbortAtShutdownIsRetriedAtOnceOnlyWhenSafe() {
        let aborted = classify(.cancelled(maybeSent: true))
        #expect(decide(aborted, method: "POST", key: false, interruption: .abortedAtShutdown) == .deadLetter(.ambiguous))
        #expect(decide(aborted, method: "POST", key: true, attempt: 5, max: 5, interruption: .abortedAtShutdown) == .deadLetter(.exhausted))
        #expect(decide(aborted, method: "POST", key: true, attempt: 2, max: 5, interruption: .abortedAtShutdown)
            == .retry(at: now, delay: .zero, destinationNotBefore: nil))
        #expect(decide(aborted, method: "GET", key: false, interruption: .abortedAtShutdown)
            == .retry(at: now, delay: .zero, destinationNotBefore: nil))
    }

    @Test func successSucceeds() {
        #expect(decide(classify(status(200))) == .succeed)
    }

    @Test func permanentFailuresDeadLetterAtOnce() {
        #expect(decide(classify(status(404)), method: "GET", key: true) == .deadLetter(.permanent))
        #expect(decide(classify(status(401)), method: "GET", key: true) == .deadLetter(.permanent))
        #expect(decide(classify(.blocked("SSRF guard"))) == .deadLetter(.permanent))
        #expect(decide(classify(status(200), expect: "application/json")) == .deadLetter(.invalidResponse))
        #expect(decide(classify(.cancelled(maybeSent: true)), method: "GET") == .deadLetter(.cancelled))
    }

    @Test func maybeDeliveredNonIdempotentWithoutKeyIsAmbiguous() {
        for outcome in [TransportOutcome.connectionLost("reset"), .timedOut(connected: true, "slow"), status(500), status(502)] {
            #expect(decide(classify(outcome), method: "POST", key: false) == .deadLetter(.ambiguous))
            #expect(decide(classify(outcome), method: "patch", key: false) == .deadLetter(.ambiguous))
            // A key or an idempotent method makes it safe to repeat.
            #expect(decide(classify(outcome), method: "POST", key: true) == .retry(at: now.adding(.seconds(1)), delay: .seconds(1), destinationNotBefore: nil))
            for method in ["GET", "put", "DELETE", "HEAD", "OPTIONS"] {
                #expect(decide(classify(outcome), method: method, key: false) == .retry(at: now.adding(.seconds(1)), delay: .seconds(1), destinationNotBefore: nil))
            }
        }
        #expect(decide(Classification.leaseExpired(), method: "POST") == .deadLetter(.ambiguous))
    }

    @Test func notProcessedOutcomesRetryForAnyMethod() {
        for outcome in [TransportOutcome.notSent("refused"), .timedOut(connected: false, "connect"), status(503), status(429), status(408), status(425)] {
            if case .retry = decide(classify(outcome), method: "POST", key: false) {} else {
                Issue.record("\(outcome) should be retried for POST without a key")
            }
        }
    }

    @Test func ambiguityIsJudgedBeforeExhaustion() {
        #expect(decide(classify(.connectionLost("x")), method: "POST", attempt: 5, max: 5) == .deadLetter(.ambiguous))
    }

    @Test func exhaustedAfterMaxAttempts() {
        #expect(decide(classify(status(503)), attempt: 5, max: 5) == .deadLetter(.exhausted))
        #expect(decide(classify(status(503)), attempt: 1, max: 1) == .deadLetter(.exhausted))
        #expect(decide(classify(status(503)), attempt: 4, max: 5) == .retry(at: now.adding(.seconds(8)), delay: .seconds(8), destinationNotBefore: nil))
    }

    @Test func retryAfterIsTheMinimumDelayAndSetsTheDestinationNotBefore() {
        let c = classify(status(503, [HTTPHeader(name: "Retry-After", value: "10")]))
        #expect(decide(c) == .retry(at: now.adding(.seconds(10)), delay: .seconds(10), destinationNotBefore: now.adding(.seconds(10))))
        // A longer backoff wins over a shorter Retry-After; the destination still waits only Retry-After.
        let short = classify(status(429, [HTTPHeader(name: "Retry-After", value: "1")]))
        #expect(decide(short, attempt: 4) == .retry(at: now.adding(.seconds(8)), delay: .seconds(8), destinationNotBefore: now.adding(.seconds(1))))
    }

    @Test func retryAfterIsCapped() {
        let c = classify(status(429, [HTTPHeader(name: "Retry-After", value: "86400")]))
        #expect(decide(c) == .retry(at: now.adding(.seconds(30)), delay: .seconds(30), destinationNotBefore: now.adding(.seconds(30))))
        let zeroCap = RetryPolicy(backoff: policy.backoff, retryAfterCap: .zero)
        #expect(decide(c, policy: zeroCap) == .retry(at: now.adding(.seconds(1)), delay: .seconds(1), destinationNotBefore: now))
    }

    @Test func deadlineBeforeTheNextAttemptDeadLettersAtOnce() {
        let c = classify(status(503))
        #expect(decide(c, attempt: 3, deadline: now.adding(.seconds(3))) == .deadLetter(.deadline))
        #expect(decide(c, attempt: 3, deadline: now.adding(.seconds(4))) == .retry(at: now.adding(.seconds(4)), delay: .seconds(4), destinationNotBefore: nil))
        #expect(decide(c, attempt: 1, deadline: now.addingTimeInterval(-1)) == .deadLetter(.deadline))
        // Retry-After pushing past the deadline also ends the job.
        let throttled = classify(status(429, [HTTPHeader(name: "Retry-After", value: "20")]))
        #expect(decide(throttled, deadline: now.adding(.seconds(10))) == .deadLetter(.deadline))
    }

    @Test func decorrelatedJitterUsesThePreviousDelay() {
        let p = RetryPolicy(backoff: BackoffPolicy(base: .seconds(1), cap: .seconds(100), jitter: .decorrelated))
        for seed in 0..<200 {
            var rng = SplitMix64(seed: UInt64(seed))
            let d = RetryDecider.decide(classify(status(503)), job: JobRetryFacts(method: "GET", hasIdempotencyKey: false, attempt: 2, maxAttempts: 5, previousDelay: .seconds(10)), policy: p, now: now, rng: &rng)
            guard case .retry(_, let delay, _) = d else { Issue.record("expected retry"); return }
            #expect(delay >= .seconds(1) && delay <= .seconds(30))
        }
    }
}
