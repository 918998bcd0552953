import CourierCore
import Foundation
import Testing

/// Issue 17: jobs died about 10 s after enqueue by default. With the defaults now
/// (`JobDefaults.maxAttempts`, the workers' default `RetryPolicy`), a destination that is
/// down for an hour costs no job: the whole attempt budget spans more than an hour in
/// every one of many seeded runs, and several hours on average.
@Suite struct OutageSurvivalTests {
    /// The time from the first attempt until the job is exhausted, when every attempt fails
    /// at once with a 503 (no Retry-After).
    static func span(seed: UInt64) -> TimeInterval {
        var rng = SplitMix64(seed: seed)
        let policy = RetryPolicy()
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        var now = start
        var previous: Duration?
        let failure = OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 503, headers: [])), expectContentType: nil, now: now)
        for attempt in 1...JobDefaults.maxAttempts {
            let facts = JobRetryFacts(method: "POST", hasIdempotencyKey: true, attempt: attempt,
                                      maxAttempts: JobDefaults.maxAttempts, deadline: nil, previousDelay: previous)
            switch RetryDecider.decide(failure, job: facts, policy: policy, now: now, rng: &rng) {
            case .retry(let at, let delay, _):
                now = at
                previous = delay
            case .deadLetter(let reason):
                #expect(reason == .exhausted)
                #expect(attempt == JobDefaults.maxAttempts, "exhausted only after the last attempt")
                return now.timeIntervalSince(start)
            case .succeed:
                Issue.record("a 503 does not succeed")
            }
        }
        Issue.record("never exhausted")
        return 0
    }

    @Test func theDefaultsSurviveAnHourLongOutage() {
        let spans = (0..<2000).map { Self.span(seed: UInt64($0)) }
        let shortest = spans.min() ?? 0
        let mean = spans.reduce(0, +) / Double(spans.count)
        #expect(shortest > 3600 * 2, "the shortest of 2000 runs spans \(shortest / 3600) h")
        #expect(mean > 3600 * 5 && mean < 3600 * 9, "on average about 6.5 h: \(mean / 3600) h")
        #expect(RetryPolicy().backoff.cap == .seconds(3600))
        #expect(JobDefaults.maxAttempts == 25)
    }

    func throttled(retryAfter seconds: Int) -> Classification {
        OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 429, headers: [HTTPHeader(name: "Retry-After", value: String(seconds))])),
                                   expectContentType: nil, now: Date(timeIntervalSince1970: 1_700_000_000))
    }

    /// The throttling rule: a throttled answer uses no attempt while the job has a deadline.
    @Test func throttlingUsesNoAttemptWithinTheDeadline() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        var rng = SplitMix64(seed: 1)
        let policy = RetryPolicy(backoff: BackoffPolicy(jitter: .none))
        let withDeadline = JobRetryFacts(method: "POST", hasIdempotencyKey: true, attempt: 5, maxAttempts: 5,
                                         deadline: now.addingTimeInterval(3600))
        let c = throttled(retryAfter: 60)
        #expect(c.errorClass == .throttled)
        #expect(!RetryDecider.usesAttempt(c, job: withDeadline))
        // On the last attempt it is retried, not exhausted, and waits the backoff or the Retry-After.
        #expect(RetryDecider.decide(c, job: withDeadline, policy: policy, now: now, rng: &rng)
            == .retry(at: now.adding(.seconds(60)), delay: .seconds(60), destinationNotBefore: now.adding(.seconds(60))))
        // Past the deadline it ends as `deadline`.
        let late = JobRetryFacts(method: "POST", hasIdempotencyKey: true, attempt: 5, maxAttempts: 5, deadline: now.addingTimeInterval(30))
        #expect(RetryDecider.decide(c, job: late, policy: policy, now: now, rng: &rng) == .deadLetter(.deadline))
        // Without a deadline a throttled answer uses its attempt: nothing else would bound it.
        let open = JobRetryFacts(method: "POST", hasIdempotencyKey: true, attempt: 5, maxAttempts: 5)
        #expect(RetryDecider.usesAttempt(c, job: open))
        #expect(RetryDecider.decide(c, job: open, policy: policy, now: now, rng: &rng) == .deadLetter(.exhausted))
        // Other failures always use their attempt.
        let failed = OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 500, headers: [])), expectContentType: nil, now: now)
        #expect(RetryDecider.usesAttempt(failed, job: withDeadline))
        #expect(RetryDecider.decide(failed, job: withDeadline, policy: policy, now: now, rng: &rng) == .deadLetter(.exhausted))
    }
}
