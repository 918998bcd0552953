import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The breaker exists twice: in PL/pgSQL (sql/0003_breakers.sql, the fleet's) and in
/// Swift (`BreakerStateMachine`, the reference model and the per-process breaker).
/// Both are driven with the same seeded random event sequences, and must agree after
/// every event: state, whether a probe was granted and its token accepted, counts,
/// and the open period and probe lease left.
///
/// Time: the whole sequence runs in one transaction, so the database's `now()` stands
/// still; moving time forward shifts the row's timestamps back instead, and the Swift
/// clock forward by the same amount. In the first test jitter is 1 on both sides
/// (cooldownJitter 0, p_jitter 1), so open periods must agree to the millisecond. In the
/// second the Swift machine draws its factors from a seeded generator and the database
/// is given the same factors (as a worker gives it the factor it drew), so the open
/// periods must agree to within the millisecond the factor's rounding leaves; that one
/// found the SQL breaker compounding jitter across failed probes (fixed by 0020).
@Suite struct BreakerAgreementTests {
    static let destination = "https://agree.example.com:443"
    static let policy = BreakerPolicy(failureThreshold: 4, window: .seconds(10), minimumVolume: 8, failureRateThreshold: 0.5,
                                      cooldown: .seconds(5), cooldownMax: .seconds(40), probeLease: .seconds(3), cooldownJitter: 0)
    static let jitteredPolicy = BreakerPolicy(failureThreshold: 4, window: .seconds(10), minimumVolume: 8, failureRateThreshold: 0.5,
                                              cooldown: .seconds(5), cooldownMax: .seconds(40), probeLease: .seconds(3),
                                              cooldownJitter: 0.2)
    static var report: BreakersTable.ReportPolicy {
        BreakersTable.ReportPolicy(
            failureThreshold: policy.failureThreshold, windowMilliseconds: policy.window.milliseconds,
            minimumVolume: policy.minimumVolume, failureRate: policy.failureRateThreshold,
            cooldownMilliseconds: policy.cooldown.milliseconds, cooldownMaxMilliseconds: policy.cooldownMax.milliseconds,
            probeLeaseMilliseconds: policy.probeLease.milliseconds)
    }

    enum Event: CustomStringConvertible {
        case evidence(BreakerEvidence)
        case advance(milliseconds: Int64)
        case tryProbe
        case probeResult(succeeded: Bool, stale: Bool)
        case forceOpen, forceClose, reset

        var description: String {
            switch self {
            case .evidence(let e): "evidence(s\(e.successes) f\(e.failures) t\(e.consecutiveFailures))"
            case .advance(let ms): "advance(\(ms)ms)"
            case .tryProbe: "tryProbe"
            case .probeResult(let ok, let stale): "probeResult(\(ok ? "ok" : "fail")\(stale ? ", stale" : ""))"
            case .forceOpen: "forceOpen"
            case .forceClose: "forceClose"
            case .reset: "reset"
            }
        }

        static func random(using rng: inout SplitMix64) -> Event {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40:
                let failures = Int.random(in: 0...5, using: &rng)
                let successes = Int.random(in: 0...(failures == 0 ? 4 : 3), using: &rng)
                let trailing = successes == 0 ? failures : Int.random(in: 0...failures, using: &rng)
                return .evidence(BreakerEvidence(successes: max(successes, failures == 0 ? 1 : 0), failures: failures,
                                                 consecutiveFailures: trailing))
            case 40..<62: return .advance(milliseconds: [500, 2_000, 3_000, 5_000, 9_999, 10_000, 10_001, 20_000, 45_000]
                .randomElement(using: &rng)!)
            case 62..<78: return .tryProbe
            case 78..<92: return .probeResult(succeeded: Bool.random(using: &rng), stale: Int.random(in: 0..<5, using: &rng) == 0)
            case 92..<95: return .forceOpen
            case 95..<98: return .forceClose
            default: return .reset
            }
        }
    }

    struct Observed: Equatable, CustomStringConvertible {
        var state: String
        var consecutiveFailures: Int
        var windowSuccesses: Int
        var windowFailures: Int
        /// Until the next probe may be granted (open) or the probe lease ends (half-open), in ms; nil when closed or forced.
        var remaining: Int64?
        /// Equal, open periods within `tolerance` ms.
        func agrees(with other: Observed, tolerance: Int64) -> Bool {
            var a = self, b = other
            guard let x = a.remaining, let y = b.remaining else { return a == b }
            a.remaining = nil
            b.remaining = nil
            return a == b && abs(x - y) <= tolerance
        }
        var description: String {
            "\(state) consecutive=\(consecutiveFailures) window=\(windowSuccesses)/\(windowFailures) remaining=\(remaining.map(String.init) ?? "-")"
        }
    }

    /// Runs one sequence against both; returns how many transitions both made.
    /// With `jittered`, the Swift machine runs under ``jitteredPolicy`` and draws its
    /// factors from a seeded generator; each factor is drawn first from a copy of that
    /// generator and handed to the database.
    func run(seed: UInt64, steps: Int, jittered: Bool = false, db: PostgresConnection) throws -> Int {
        var rng = SplitMix64(seed: seed)
        var factors = SplitMix64(seed: seed &+ 1_000)
        let policy = jittered ? Self.jitteredPolicy : Self.policy
        let tolerance: Int64 = jittered ? 1 : 0
        let destination = Self.destination + "/\(seed)"
        try db.query("begin")
        defer { _ = try? db.query("rollback") }
        let start = try db.query("select now()").rows[0].decode(0, as: Date.self)
        var elapsed: Int64 = 0
        var now: Date { start.addingTimeInterval(Double(elapsed) / 1000) }
        var swift = BreakerStateMachine(policy: policy, now: start)
        try db.query("insert into courier.breakers (destination) values (\(destination))")
        var swiftToken: Int64?, sqlToken: Int64?
        var transitions = 0
        let worker = UUID()
        for step in 0..<steps {
            let event = Event.random(using: &rng)
            let context = "seed \(seed) step \(step) \(event)"
            let before = swift.state.name
            switch event {
            case .evidence(let evidence):
                var next = factors
                var report = Self.report
                report.openMilliseconds = policy.jitteredCooldown(policy.cooldown, using: &next).milliseconds
                _ = swift.apply(evidence, now: now, using: &factors)
                let state = try BreakersTable.report(
                    destination: destination, successes: evidence.successes, failures: evidence.failures,
                    trailingFailures: evidence.consecutiveFailures, worker: "w", policy: report, on: db)
                #expect(state == swift.state.name.rawValue, "\(context): report returned \(state)")
            case .advance(let ms):
                elapsed += ms
                try db.query("""
                    update courier.breakers set
                        changed_at = changed_at - \(ms)::bigint * interval '1 millisecond',
                        window_started_at = window_started_at - \(ms)::bigint * interval '1 millisecond',
                        open_until = open_until - \(ms)::bigint * interval '1 millisecond',
                        probe_lease_until = probe_lease_until - \(ms)::bigint * interval '1 millisecond'
                    where destination = \(destination)
                    """)
            case .tryProbe:
                let granted = swift.tryAcquireProbe(now: now)
                let sqlGranted = try BreakersTable.tryProbe(destination: destination, worker: worker,
                                                            probeLeaseMilliseconds: Self.report.probeLeaseMilliseconds, on: db)
                #expect((granted != nil) == (sqlGranted != nil), "\(context): probe granted swift=\(granted != nil) sql=\(sqlGranted != nil)")
                if let granted, let sqlGranted {
                    swiftToken = granted.generation
                    sqlToken = sqlGranted
                }
            case .probeResult(let succeeded, let stale):
                guard let swiftCurrent = swiftToken, let sqlCurrent = sqlToken else { continue }
                var next = factors
                let factor = policy.cooldownJitterFactor(using: &next)
                let action = swift.recordProbe(generation: stale ? swiftCurrent - 1 : swiftCurrent, succeeded: succeeded,
                                               now: now, using: &factors)
                let sqlState = try BreakersTable.probeResult(
                    destination: destination, generation: stale ? sqlCurrent - 1 : sqlCurrent, succeeded: succeeded,
                    worker: "w", policy: Self.report, jitter: factor, on: db)
                #expect((action == .staleProbeIgnored) == (sqlState == nil), "\(context): stale swift=\(action) sql=\(sqlState ?? "nil")")
            case .forceOpen:
                _ = swift.forceOpen(now: now)
                try db.query("select courier.breaker_force(\(destination), 'open')")
            case .forceClose:
                _ = swift.forceClose(now: now)
                try db.query("select courier.breaker_force(\(destination), 'close')")
            case .reset:
                _ = swift.reset(now: now)
                try db.query("select courier.breaker_force(\(destination), 'reset')")
            }
            if swift.state.name != before { transitions += 1 }
            let expected = observe(swift, now: now)
            let actual = try observe(db, destination)
            let agree = actual.agrees(with: expected, tolerance: tolerance)
            #expect(agree, "\(context)\n  sql:   \(actual)\n  swift: \(expected)")
            if !agree { return transitions }  // the rest would only repeat the first difference
        }
        return transitions
    }

    func observe(_ machine: BreakerStateMachine, now: Date) -> Observed {
        let remaining: Int64?
        switch machine.state {
        case .closed: remaining = nil
        case .open(let until, _): remaining = machine.forcedOpen ? nil : Int64((until.timeIntervalSince(now) * 1000).rounded())
        case .halfOpen(let probeUntil, _): remaining = Int64((probeUntil.timeIntervalSince(now) * 1000).rounded())
        }
        return Observed(state: machine.state.name.rawValue, consecutiveFailures: machine.state == .closed ? machine.consecutiveFailures : 0,
                        windowSuccesses: machine.state == .closed ? machine.windowSuccesses : 0,
                        windowFailures: machine.state == .closed ? machine.windowFailures : 0, remaining: remaining)
    }

    func observe(_ db: PostgresConnection, _ destination: String) throws -> Observed {
        let r = try db.query("""
            select state, consecutive_failures, window_successes, window_failures,
                   case when state = 'open' and not forced then (extract(epoch from open_until - now()) * 1000)::bigint
                        when state = 'half_open' then (extract(epoch from probe_lease_until - now()) * 1000)::bigint end
            from courier.breakers where destination = \(destination)
            """).rows[0]
        let state = try r.decode(0, as: String.self)
        // Counts only matter while closed (both ignore evidence otherwise).
        let closed = state == "closed"
        return Observed(state: state, consecutiveFailures: closed ? try r.decode(1, as: Int.self) : 0,
                        windowSuccesses: closed ? try r.decode(2, as: Int.self) : 0,
                        windowFailures: closed ? try r.decode(3, as: Int.self) : 0, remaining: try r.decode(4, as: Int64?.self))
    }

    @Test func sqlAndSwiftAgreeEventByEvent() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var transitions = 0
            for seed in UInt64(1)...40 {
                transitions += try run(seed: seed, steps: 150, db: db)
            }
            // The sequences must exercise the machine, not idle in one state.
            #expect(transitions > 200, "only \(transitions) transitions")
        }
    }

    @Test func sqlAndSwiftAgreeUnderTheSameJitter() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var transitions = 0
            for seed in UInt64(1)...40 {
                transitions += try run(seed: seed, steps: 150, jittered: true, db: db)
            }
            #expect(transitions > 200, "only \(transitions) transitions")
        }
    }

    /// The rule itself, on one destination: failed probes double the nominal cooldown and
    /// jitter only the open period (5 s nominal, factor 1.2 every time: 6, 12, 24, 40 s cap).
    @Test func failedProbesDoubleTheNominalCooldownNotTheJitteredOne() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let destination = Self.destination + "/doubling"
            var report = Self.report
            report.openMilliseconds = 6_000
            #expect(try BreakersTable.report(destination: destination, successes: 0, failures: 4, trailingFailures: 4,
                                             worker: "w", policy: report, on: db) == "open")
            var periods = [try openPeriod(db, destination)]
            for _ in 0..<3 {
                try db.query("update courier.breakers set open_until = now() where destination = \(destination)")
                let generation = try #require(try BreakersTable.tryProbe(destination: destination, worker: UUID(),
                                                                          probeLeaseMilliseconds: 3_000, on: db))
                #expect(try BreakersTable.probeResult(destination: destination, generation: generation, succeeded: false,
                                                      worker: "w", policy: Self.report, jitter: 1.2, on: db) == "open")
                periods.append(try openPeriod(db, destination))
            }
            #expect(periods == [6_000, 12_000, 24_000, 40_000])
        }
    }

    /// The open period of the breaker's current opening, in ms.
    func openPeriod(_ db: PostgresConnection, _ destination: String) throws -> Int64 {
        try db.query("""
            select (extract(epoch from open_until - changed_at) * 1000)::bigint from courier.breakers
            where destination = \(destination)
            """).rows[0].decode(0, as: Int64.self)
    }
}
