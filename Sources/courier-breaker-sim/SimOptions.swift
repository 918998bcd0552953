import CourierCore
import Foundation

/// Which breaker the fleet runs with.
enum BreakerMode: String, CaseIterable, Sendable {
    /// Courier's breaker: one row per destination in PostgreSQL, shared by the fleet.
    case shared
    /// Each worker keeps its own breaker in memory (see `LocalBreakerHandler`).
    case process
    /// No breaker at all: only retries with backoff.
    case none

    var title: String {
        switch self {
        case .shared: "shared (Courier)"
        case .process: "per-process"
        case .none: "no breaker"
        }
    }
}

/// The simulator's settings; every one has a flag.
struct SimOptions: Sendable {
    var adminURL: String?
    var fleets: [Int] = [1, 3, 8]
    var modes: [BreakerMode] = BreakerMode.allCases
    var warmup: Duration = .seconds(2)
    var outage: Duration = .seconds(20)
    var drainTimeout: Duration = .seconds(40)
    /// Jobs enqueued per second for the destination, from warm-up start until it recovers.
    var rate: Int = 10
    var concurrency: Int = 8
    var maxAttempts: Int = 10
    var failures: Int = 5
    var cooldown: Duration = .seconds(2)
    var cooldownMax: Duration = .seconds(8)
    var backoffBase: Duration = .milliseconds(200)
    var backoffCap: Duration = .seconds(2)
    var results: String?
    /// Jobs in the dead destination's backlog for the claim-cost measurement; 0 skips it.
    var backlog: Int = 100_000

    static let usage = """
        usage: courier-breaker-sim [--admin-url URL] [--fleets 1,3,8] [--modes shared,process,none]
                                   [--warmup 2s] [--outage 20s] [--drain-timeout 40s] [--rate 10]
                                   [--concurrency 8] [--max-attempts 10] [--breaker-failures 5]
                                   [--breaker-cooldown 2s] [--breaker-cooldown-max 8s]
                                   [--backoff-base 200ms] [--backoff-cap 2s] [--backlog 100000]
                                   [--results FILE.md]

        Simulates a destination outage (503 without Retry-After) for fleets of in-process
        Courier workers with the shared breaker, a per-process breaker and no breaker, and
        prints what reached the dead destination. Then it times the claim statement
        behind a backlog of --backlog jobs for an open destination (0 skips). Each scenario gets its own database on
        the cluster named by --admin-url or COURIER_TEST_DATABASE_URL (an admin URL).
        """

    static func parse(_ arguments: [String], environment: [String: String]) throws(ValidationError) -> SimOptions {
        var o = SimOptions()
        o.adminURL = environment["COURIER_TEST_DATABASE_URL"]
        var rest = arguments[...]
        func value(_ flag: String) throws(ValidationError) -> String {
            guard let v = rest.popFirst() else { throw ValidationError(field: flag, message: "needs a value") }
            return v
        }
        func int(_ flag: String, _ range: ClosedRange<Int>) throws(ValidationError) -> Int {
            let text = try value(flag)
            guard let n = Int(text), range.contains(n) else {
                throw ValidationError(field: flag, message: "'\(text)' must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return n
        }
        func duration(_ flag: String) throws(ValidationError) -> Duration {
            try DurationParser.parsePositive(try value(flag), field: flag)
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--admin-url": o.adminURL = try value(flag)
            case "--fleets":
                let text = try value(flag)
                let sizes = text.split(separator: ",").compactMap { Int($0) }
                guard !sizes.isEmpty, sizes.count == text.split(separator: ",").count, sizes.allSatisfy({ (1...32).contains($0) }) else {
                    throw ValidationError(field: flag, message: "'\(text)' must be a comma-separated list of fleet sizes in 1...32")
                }
                o.fleets = sizes
            case "--modes":
                let text = try value(flag)
                let modes = text.split(separator: ",").compactMap { BreakerMode(rawValue: String($0)) }
                guard !modes.isEmpty, modes.count == text.split(separator: ",").count else {
                    throw ValidationError(field: flag, message: "'\(text)' must list shared, process and/or none")
                }
                o.modes = modes
            case "--warmup": o.warmup = try duration(flag)
            case "--outage": o.outage = try duration(flag)
            case "--drain-timeout": o.drainTimeout = try duration(flag)
            case "--rate": o.rate = try int(flag, 1...1000)
            case "--concurrency": o.concurrency = try int(flag, 1...256)
            case "--max-attempts": o.maxAttempts = try int(flag, 1...1000)
            case "--breaker-failures": o.failures = try int(flag, 1...1000)
            case "--breaker-cooldown": o.cooldown = try duration(flag)
            case "--breaker-cooldown-max": o.cooldownMax = try duration(flag)
            case "--backoff-base": o.backoffBase = try duration(flag)
            case "--backoff-cap": o.backoffCap = try duration(flag)
            case "--results": o.results = try value(flag)
            case "--backlog": o.backlog = try int(flag, 0...10_000_000)
            case "-h", "--help": throw ValidationError(field: "--help", message: "help requested")
            default: throw ValidationError(field: flag, message: "unknown flag\n" + usage)
            }
        }
        guard let url = o.adminURL, !url.isEmpty else {
            throw ValidationError(field: "--admin-url", message: "required (or set COURIER_TEST_DATABASE_URL), e.g. postgresql://courier@127.0.0.1:54320/postgres")
        }
        guard o.cooldownMax >= o.cooldown else {
            throw ValidationError(field: "--breaker-cooldown-max", message: "must be at least --breaker-cooldown")
        }
        return o
    }

    /// The breaker policy the shared and per-process breakers both use.
    var breakerPolicy: BreakerPolicy {
        BreakerPolicy(failureThreshold: failures, window: .seconds(60), minimumVolume: 20, failureRateThreshold: 0.5,
                      cooldown: cooldown, cooldownMax: cooldownMax, probeLease: .seconds(30), cooldownJitter: 0.2)
    }
}
