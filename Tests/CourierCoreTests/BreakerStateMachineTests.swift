import CourierCore
import Foundation
import Testing

@Suite struct BreakerStateMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    /// Deterministic cooldowns (no jitter), small numbers.
    let policy = BreakerPolicy(failureThreshold: 3, window: .seconds(10), minimumVolume: 6, failureRateThreshold: 0.5,
                               cooldown: .seconds(2), cooldownMax: .seconds(5), probeLease: .seconds(1), cooldownJitter: 0)

    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    func acquire(_ b: inout BreakerStateMachine, _ now: Date) throws -> BreakerProbe {
        let probe = b.tryAcquireProbe(now: now)
        return try #require(probe)
    }

    func opened(_ action: BreakerAction, _ reason: BreakerTransition.Reason, from: BreakerStateName = .closed) -> Bool {
        if case .transitioned(let t) = action { return t.from == from && t.to == .open && t.reason == reason }
        return false
    }

    @Test func tripsOnConsecutiveFailures() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        #expect(b.recordFailure(now: at(1), using: &rng) == .none)
        #expect(b.recordFailure(now: at(2), using: &rng) == .none)
        #expect(b.consecutiveFailures == 2)
        let action = b.recordFailure(now: at(3), using: &rng)
        #expect(action == .transitioned(BreakerTransition(from: .closed, to: .open, reason: .consecutiveFailures, at: at(3))))
        #expect(b.state == .open(until: at(5), cooldown: .seconds(2)))
        #expect(!b.admitsTraffic)
        #expect(b.nextProbeAt == at(5))
        #expect(b.since == at(3))
    }

    @Test func aSuccessBreaksTheRun() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        _ = b.recordFailure(now: at(1), using: &rng)
        _ = b.recordFailure(now: at(1), using: &rng)
        #expect(b.recordSuccess(now: at(1), using: &rng) == .none)
        #expect(b.consecutiveFailures == 0)
        #expect(b.recordFailure(now: at(2), using: &rng) == .none)
        #expect(b.state == .closed)
    }

    @Test func tripsOnRateOnlyOnceTheMinimumVolumeIsReached() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        // F S F S F: 3 failures of 5, never 3 in a row, volume below 6.
        for failure in [true, false, true, false, true] {
            #expect(b.record(failure: failure, now: at(1), using: &rng) == .none)
        }
        // The sixth outcome, even a success, brings the rate (3/6 = 50%) into effect.
        #expect(opened(b.recordSuccess(now: at(2), using: &rng), .failureRate))
    }

    @Test func rateWindowRestarts() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        for failure in [true, false, true, false, true] {
            _ = b.record(failure: failure, now: at(1), using: &rng)
        }
        // After the 10 s window the counts start over.
        #expect(b.recordSuccess(now: at(12), using: &rng) == .none)
        #expect(b.windowSuccesses == 1 && b.windowFailures == 0)
        #expect(b.windowStart == at(12))
    }

    @Test func halfOpenAllowsExactlyOneProbeAndSuccessCloses() throws {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        for _ in 0..<3 { _ = b.recordFailure(now: at(0), using: &rng) }
        #expect(b.tryAcquireProbe(now: at(1.9)) == nil)  // still cooling down
        let probe = try acquire(&b, at(2))
        #expect(probe.generation == 1)
        #expect(probe.expiresAt == at(3))
        #expect(probe.transition == BreakerTransition(from: .open, to: .halfOpen, reason: .cooldownElapsed, at: at(2)))
        #expect(b.state == .halfOpen(probeUntil: at(3), generation: 1))
        #expect(b.tryAcquireProbe(now: at(2)) == nil)     // exactly one
        #expect(b.tryAcquireProbe(now: at(2.9)) == nil)
        // Ordinary late outcomes do not decide anything while half-open.
        #expect(b.recordSuccess(now: at(2.5), using: &rng) == .none)
        #expect(b.recordFailure(now: at(2.5), using: &rng) == .none)
        let closed = b.recordProbe(generation: 1, succeeded: true, now: at(2.5), using: &rng)
        #expect(closed == .transitioned(BreakerTransition(from: .halfOpen, to: .closed, reason: .probeSucceeded, at: at(2.5))))
        #expect(b.state == .closed)
        #expect(b.admitsTraffic)
        #expect(b.tryAcquireProbe(now: at(3)) == nil)     // no probes while closed
        #expect(b.consecutiveFailures == 0)
    }

    @Test func failedProbesDoubleTheCooldownUpToTheMaximum() throws {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        for _ in 0..<3 { _ = b.recordFailure(now: at(0), using: &rng) }
        var now = 2.0
        for expected in [4.0, 5.0, 5.0] {
            let probe = try acquire(&b, at(now))
            let action = b.recordProbe(generation: probe.generation, succeeded: false, now: at(now), using: &rng)
            #expect(opened(action, .probeFailed, from: .halfOpen))
            #expect(b.state == .open(until: at(now + expected), cooldown: .seconds(expected)))
            now += expected
        }
        // A successful probe resets the cooldown to the base for the next trip.
        let probe = try acquire(&b, at(now))
        _ = b.recordProbe(generation: probe.generation, succeeded: true, now: at(now), using: &rng)
        #expect(b.cooldown == .seconds(2))
        for _ in 0..<3 { _ = b.recordFailure(now: at(now + 1), using: &rng) }
        #expect(b.state == .open(until: at(now + 3), cooldown: .seconds(2)))
    }

    @Test func staleProbeResultIsFencedByGeneration() throws {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        for _ in 0..<3 { _ = b.recordFailure(now: at(0), using: &rng) }
        let hung = try acquire(&b, at(2))
        // The hung probe's lease expires; another caller takes over.
        #expect(b.tryAcquireProbe(now: at(2.99)) == nil)
        #expect(b.tryAcquireProbe(now: at(3)) == nil, "at its end the lease still holds, as in courier.breaker_try_probe")
        let second = try acquire(&b, at(3.5))
        #expect(second.generation == hung.generation + 1)
        #expect(second.transition.reason == .probeLeaseExpired)
        #expect(second.transition.from == .halfOpen && second.transition.to == .halfOpen)
        // The first probe's late result changes nothing.
        #expect(b.recordProbe(generation: hung.generation, succeeded: true, now: at(3.5), using: &rng) == .staleProbeIgnored)
        #expect(b.state == .halfOpen(probeUntil: at(4.5), generation: second.generation))
        #expect(b.recordProbe(generation: second.generation, succeeded: false, now: at(3.6), using: &rng) != .staleProbeIgnored)
        // And after the current probe reported, the old generation is still ignored.
        #expect(b.recordProbe(generation: second.generation, succeeded: true, now: at(3.7), using: &rng) == .staleProbeIgnored)
        #expect(b.recordProbe(generation: 99, succeeded: true, now: at(3.7), using: &rng) == .staleProbeIgnored)
        if case .open = b.state {} else { Issue.record("expected open, got \(b.state)") }
    }

    @Test func jitterVariesTheCooldownBothWaysButNeverBeyondTheMaximum() {
        let jittery = BreakerPolicy(failureThreshold: 1, cooldown: .seconds(10), cooldownMax: .seconds(20), cooldownJitter: 0.2)
        var rng = SplitMix64(seed: 77)
        var distinct = Set<Date>()
        for _ in 0..<500 {
            var b = BreakerStateMachine(policy: jittery, now: t0)
            _ = b.recordFailure(now: t0, using: &rng)
            guard case .open(let until, let cooldown) = b.state else { Issue.record("not open"); return }
            #expect(cooldown == .seconds(10))
            #expect(until >= at(8) && until <= at(12))
            distinct.insert(until)
        }
        #expect(distinct.count > 100)
        #expect(distinct.contains { $0 < at(10) } && distinct.contains { $0 > at(10) }, "shorter and longer than the cooldown")

        // With the maximum equal to the cooldown, jitter can only shorten it.
        let tight = BreakerPolicy(failureThreshold: 1, cooldown: .seconds(10), cooldownMax: .seconds(10), cooldownJitter: 0.2)
        for _ in 0..<200 {
            #expect(tight.jitteredCooldown(.seconds(10), using: &rng) <= .seconds(10))
            let factor = tight.cooldownJitterFactor(using: &rng)
            #expect(factor >= 0.8 && factor <= 1.2)
        }
        #expect(BreakerPolicy(cooldownJitter: 0).cooldownJitterFactor(using: &rng) == 1)
    }

    @Test func operatorControls() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        #expect(b.forceOpen(now: at(1)) == .transitioned(BreakerTransition(from: .closed, to: .open, reason: .operatorOpen, at: at(1))))
        #expect(b.forcedOpen)
        #expect(b.tryAcquireProbe(now: at(1_000_000)) == nil)  // forced open never probes
        #expect(b.forceClose(now: at(2)) == .transitioned(BreakerTransition(from: .open, to: .closed, reason: .operatorClose, at: at(2))))
        #expect(!b.forcedOpen && b.admitsTraffic)

        // Reset returns to the base cooldown; close keeps the escalated one.
        for _ in 0..<3 { _ = b.recordFailure(now: at(3), using: &rng) }
        let p = b.tryAcquireProbe(now: at(5))!
        _ = b.recordProbe(generation: p.generation, succeeded: false, now: at(5), using: &rng)
        #expect(b.cooldown == .seconds(4))
        _ = b.forceClose(now: at(6))
        #expect(b.cooldown == .seconds(4))
        #expect(b.reset(now: at(7)) == .transitioned(BreakerTransition(from: .closed, to: .closed, reason: .operatorReset, at: at(7))))
        #expect(b.cooldown == .seconds(2))
        #expect(b.generation == 1)  // generations stay monotonic
    }

    @Test func evidenceBatchesApplyLikeSingleEvents() {
        var b = BreakerStateMachine(policy: policy, now: t0)
        var rng = SplitMix64(seed: 1)
        // Two failures flushed, then a batch ending in one more failure after a success: the run is 1.
        #expect(b.apply(BreakerEvidence(successes: 0, failures: 2, consecutiveFailures: 2), now: at(1), using: &rng) == .none)
        #expect(b.apply(BreakerEvidence(successes: 1, failures: 1, consecutiveFailures: 1), now: at(1), using: &rng) == .none)
        #expect(b.consecutiveFailures == 1)
        // Two more failures from another worker: 3 in a row.
        #expect(opened(b.apply(BreakerEvidence(successes: 0, failures: 2, consecutiveFailures: 2), now: at(2), using: &rng), .consecutiveFailures))
        // Evidence arriving while open is ignored.
        #expect(b.apply(BreakerEvidence(failures: 9, consecutiveFailures: 9), now: at(2), using: &rng) == .none)
    }

    @Test func policyValidation() throws {
        try BreakerPolicy().validate()
        #expect(throws: ValidationError.self) { try BreakerPolicy(failureThreshold: 0).validate() }
        #expect(throws: ValidationError.self) { try BreakerPolicy(window: .zero).validate() }
        #expect(throws: ValidationError.self) { try BreakerPolicy(failureRateThreshold: 1.5).validate() }
        do {
            try BreakerPolicy(cooldown: .seconds(60), cooldownMax: .seconds(30)).validate()
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "--breaker-cooldown-max")
        }
    }
}

@Suite struct BreakerEvidenceTests {
    @Test func countsTheTrailingRun() {
        var e = BreakerEvidence()
        #expect(e.isEmpty)
        for failure in [true, true, false, true, true] { e.record(failure) }
        #expect(e == BreakerEvidence(successes: 1, failures: 4, consecutiveFailures: 2))
        #expect(!e.isEmpty)
    }

    @Test func recordsOnlyBreakerEvidence() {
        var e = BreakerEvidence()
        let now = Date(timeIntervalSince1970: 0)
        for outcome in [TransportOutcome.response(HTTPResponseSummary(status: 404)), .response(HTTPResponseSummary(status: 429)),
                        .blocked("x"), .cancelled(maybeSent: true)] {
            e.record(OutcomeClassifier.classify(outcome, expectContentType: nil, now: now))
        }
        #expect(e.isEmpty)
        e.record(OutcomeClassifier.classify(.notSent("refused"), expectContentType: nil, now: now))
        e.record(OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 200)), expectContentType: nil, now: now))
        e.record(OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 500)), expectContentType: nil, now: now))
        #expect(e == BreakerEvidence(successes: 1, failures: 2, consecutiveFailures: 1))
    }

    @Test func wouldTrip() {
        let policy = BreakerPolicy()  // 5 in a row, or 50% of 20
        var e = BreakerEvidence()
        for _ in 0..<4 { e.record(true) }
        #expect(!e.wouldTrip(policy))
        e.record(true)
        #expect(e.wouldTrip(policy))
        var mixed = BreakerEvidence()
        for i in 0..<19 { mixed.record(i % 2 == 0) }  // 10 failures of 19
        #expect(!mixed.wouldTrip(policy))
        mixed.record(false)                             // 10 of 20
        #expect(mixed.wouldTrip(policy))
    }

    @Test func appendKeepsTheRunAcrossBatches() {
        var a = BreakerEvidence(successes: 3, failures: 1, consecutiveFailures: 1)
        a.append(BreakerEvidence(successes: 0, failures: 2, consecutiveFailures: 2))
        #expect(a == BreakerEvidence(successes: 3, failures: 3, consecutiveFailures: 3))
        a.append(BreakerEvidence(successes: 1, failures: 1, consecutiveFailures: 0))
        #expect(a == BreakerEvidence(successes: 4, failures: 4, consecutiveFailures: 0))
    }
}
