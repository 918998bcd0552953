import CourierCore
import Testing

@Suite struct BackoffPolicyTests {
    @Test func defaults() {
        let p = BackoffPolicy()
        #expect(p.strategy == .exponential)
        #expect(p.base == .seconds(1))
        #expect(p.multiplier == 2)
        #expect(p.cap == .seconds(3600))
        #expect(p.jitter == .full)
    }

    @Test(arguments: [
        (BackoffPolicy.Strategy.constant, [1, 1, 1, 1, 1]),
        (.linear, [1, 2, 3, 4, 5]),
        (.exponential, [1, 2, 4, 8, 16]),
    ])
    func nominalDelaysGrowByStrategy(strategy: BackoffPolicy.Strategy, seconds: [Int64]) {
        let p = BackoffPolicy(strategy: strategy, base: .seconds(1), jitter: .none)
        var rng = SplitMix64(seed: 1)
        for (i, expected) in seconds.enumerated() {
            #expect(p.nominalDelay(attempt: i + 1) == .seconds(expected))
            #expect(p.delay(attempt: i + 1, previousDelay: nil, using: &rng) == .seconds(expected))
        }
    }

    @Test func noneJitterIsMonotoneAndCapped() {
        for strategy in BackoffPolicy.Strategy.allCases {
            let p = BackoffPolicy(strategy: strategy, base: .milliseconds(300), multiplier: 3, cap: .seconds(20), jitter: .none)
            var rng = SplitMix64(seed: 9)
            var previous = Duration.zero
            for attempt in 1...200 {
                let d = p.delay(attempt: attempt, previousDelay: nil, using: &rng)
                #expect(d >= previous)
                #expect(d <= p.cap)
                previous = d
            }
            if strategy != .constant { #expect(previous == p.cap) }
        }
    }

    @Test func hugeAttemptNumbersDoNotOverflow() {
        let p = BackoffPolicy(jitter: .none)
        #expect(p.nominalDelay(attempt: 10_000) == p.cap)
        #expect(p.nominalDelay(attempt: Int.max) == p.cap)
        #expect(p.nominalDelay(attempt: 0) == p.base)
        #expect(p.nominalDelay(attempt: -3) == p.base)
    }

    @Test func fullJitterStaysInBoundsAndIsRoughlyUniform() {
        let p = BackoffPolicy(base: .seconds(1), cap: .seconds(600), jitter: .full)
        var rng = SplitMix64(seed: 7)
        for attempt in [1, 3, 6, 12] {
            let nominal = p.nominalDelay(attempt: attempt)
            var sum = 0.0
            var lowerHalf = 0
            let n = 10_000
            for _ in 0..<n {
                let d = p.delay(attempt: attempt, previousDelay: nil, using: &rng)
                #expect(d >= .zero && d <= nominal)
                sum += d.millisecondsDouble
                if d < nominal / 2 { lowerHalf += 1 }
            }
            let mean = sum / Double(n)
            let expected = nominal.millisecondsDouble / 2
            #expect(abs(mean - expected) < expected * 0.1, "attempt \(attempt): mean \(mean), expected \(expected)")
            #expect(abs(Double(lowerHalf) / Double(n) - 0.5) < 0.05)
        }
    }

    @Test func equalJitterStaysInUpperHalf() {
        let p = BackoffPolicy(base: .seconds(2), cap: .seconds(30), jitter: .equal)
        var rng = SplitMix64(seed: 11)
        for attempt in [1, 2, 4, 10] {
            let nominal = p.nominalDelay(attempt: attempt)
            var sum = 0.0
            for _ in 0..<10_000 {
                let d = p.delay(attempt: attempt, previousDelay: nil, using: &rng)
                #expect(d >= nominal / 2 && d <= nominal)
                sum += d.millisecondsDouble
            }
            let expected = nominal.millisecondsDouble * 0.75
            #expect(abs(sum / 10_000 - expected) < expected * 0.1)
        }
    }

    @Test func decorrelatedJitterStaysBetweenBaseAndThreeTimesPreviousCapped() {
        let p = BackoffPolicy(base: .milliseconds(100), cap: .seconds(5), jitter: .decorrelated)
        var rng = SplitMix64(seed: 3)
        var previous: Duration? = nil
        var reachedCap = false
        for attempt in 1...10_000 {
            let d = p.delay(attempt: attempt, previousDelay: previous, using: &rng)
            let high = min(p.cap, (previous ?? p.base) * 3)
            #expect(d >= p.base && d <= high)
            if d > .milliseconds(4500) { reachedCap = true }
            previous = d
        }
        #expect(reachedCap)
        // Previous below base is raised to base; a cap below base wins.
        let tiny = BackoffPolicy(base: .seconds(2), cap: .seconds(1), jitter: .decorrelated)
        #expect(tiny.delay(attempt: 1, previousDelay: .zero, using: &rng) == .seconds(1))
    }

    @Test func sameSeedSameDelays() {
        let p = BackoffPolicy()
        var a = SplitMix64(seed: 99), b = SplitMix64(seed: 99)
        let x = (1...20).map { p.delay(attempt: $0, previousDelay: nil, using: &a) }
        let y = (1...20).map { p.delay(attempt: $0, previousDelay: nil, using: &b) }
        #expect(x == y)
    }

    @Test func validation() throws {
        try BackoffPolicy().validate()
        #expect(throws: ValidationError(field: "--backoff-base", message: "must be greater than zero")) {
            try BackoffPolicy(base: .zero).validate()
        }
        #expect(throws: ValidationError.self) { try BackoffPolicy(base: .seconds(10), cap: .seconds(1)).validate() }
        #expect(throws: ValidationError.self) { try BackoffPolicy(multiplier: 0.5).validate() }
        #expect(throws: ValidationError.self) { try BackoffPolicy(multiplier: .infinity).validate() }
        #expect(try BackoffPolicy.Jitter.parse("Decorrelated") == .decorrelated)
        #expect(try BackoffPolicy.Strategy.parse("linear") == .linear)
        #expect(throws: ValidationError.self) { try BackoffPolicy.Jitter.parse("some") }
        do {
            _ = try BackoffPolicy.Strategy.parse("fibonacci")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "--backoff")
        }
    }
}

@Suite struct SplitMix64Tests {
    @Test func knownSequence() {
        // Reference values of SplitMix64 seeded with 0.
        var rng = SplitMix64(seed: 0)
        #expect(rng.next() == 0xE220_A839_7B1D_CDAF)
        #expect(rng.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(rng.next() == 0x06C4_5D18_8009_454F)
    }
}
