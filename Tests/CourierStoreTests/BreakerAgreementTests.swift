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
/// clock forward by the same amount. Jitter is 1 on both sides (cooldownJitter 0,
/// p_jitter 1), so open periods must agree to the millisecond.
@Suite struct BreakerAgreementTests {
    static let destination = "https://agree.example.com:443"
    static let policy = BreakerPolicy(failureThreshold: 4, window: .seconds(10), minimumVolume: 8, failureRateThreshold: 0.5,
                                      cooldown: .seconds(5), cooldownMax: .seconds(40), probeLease: .seconds(3), cooldownJitter: 0)
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
        var description: String {
            "\(state) consecutive=\(consecutiveFailures) window=\(windowSuccesses)/\(windowFailures) remaining=\(remaining.map(String.init) ?? "-")"
        }
    }

    /// Runs one sequence against both; returns how many transitions both made.
    func run(seed: UInt64, steps: Int, db: PostgresConnection) throws -> Int {
        var rng = SplitMix64(seed: seed)
        var unused = SplitMix64(seed: 0)
        let destination = Self.destination + "/\(seed)"
        try db.query("begin")
        defer { _ = try? db.query("rollback") }
        let start = try db.query("select now()").rows[0].decode(0, as: Date.self)
        var elapsed: Int64 = 0
        var now: Date { start.addingTimeInterval(Double(elapsed) / 1000) }
        var swift = BreakerStateMachine(policy: Self.policy, now: start)
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
                _ = swift.apply(evidence, now: now, using: &unused)
                let state = try BreakersTable.report(
                    destination: destination, successes: evidence.successes, failures: evidence.failures,
                    trailingFailures: evidence.consecutiveFailures, worker: "w", policy: Self.report, on: db)
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
                let action = swift.recordProbe(generation: stale ? swiftCurrent - 1 : swiftCurrent, succeeded: succeeded,
                                               now: now, using: &unused)
                let sqlState = try BreakersTable.probeResult(
                    destination: destination, generation: stale ? sqlCurrent - 1 : sqlCurrent, succeeded: succeeded,
                    worker: "w", policy: Self.report, jitter: 1, on: db)
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
            #expect(actual == expected, "\(context)\n  sql:   \(actual)\n  swift: \(expected)")
            if actual != expected { return transitions }  // the rest would only repeat the first difference
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
}
