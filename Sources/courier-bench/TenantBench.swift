import CourierStore
import CourierTestSupport
import Foundation
import Postgres

/// Fairness between tenants (issue 42), with jobs that name a fairness key. Three scenarios,
/// each on a fleet of `workers` jobworkers at `--concurrency concurrency`, every job a GET of
/// one loopback receiver (one destination for all keys, so the destination's own fairness has
/// nothing to share and what is measured is the keys'):
///
/// - `trickle`: `trickleKeys` keys each enqueue one job a second for `trickleSeconds`
///   (`courier.enqueue(..., fairness_key =>)`, one every 1/keys s, in turn) on an empty queue.
///   Pickup = COMMIT returning → the request read by the receiver (both CLOCK_MONOTONIC).
/// - `noisy`: the same trickle while one key's `flood` jobs (inserted at once, one statement)
///   drain: no-op jobs by default (`floodKind`), which the fleet takes as fast as it can claim,
///   so the trickle competes with the claim at its busiest and with little else; or GETs of the
///   trickle's receiver (one destination for every key), where the flood's requests in flight
///   share the box's CPU with the trickle's too. The flood's throughput during the trickle: its
///   requests the receiver read, or for no-op jobs the progress of its ids through the success
///   archive (one probe of its primary key at each end: a key's jobs are claimed in id order here).
/// - `weighted`: keys `w1`, `w2`, `w4` with weights 1, 2 and 4 (`courier.tenant_set`), each
///   with `weightedBacklog` jobs answered after `weightedDelayMilliseconds`, so the fleet's
///   slots are the bottleneck; each key's share of the starts per minute over
///   `weightedMinutes` minutes, counted by the receiver's arrival times.
///
/// Nothing polls a table while it measures: the receiver counts, and the one check at the end
/// that the flood or every weighted key still had waiting jobs is one probe of jobs_fair_idx.
struct TenantBench {
    static let scenarios = ["trickle", "noisy", "weighted"]
    static let weights = [("w1", 1), ("w2", 2), ("w4", 4)]

    let context: BenchContext
    let flood: Int
    let floodKind: DrainBench.Kind
    let trickleKeys: Int
    /// Trickle jobs per second over all its keys, in turn (`trickleKeys`: one a second each).
    let trickleRate: Int
    let trickleSeconds: Int
    let workers: Int
    let concurrency: Int
    let weightedBacklog: Int
    let weightedMinutes: Int
    let weightedDelayMilliseconds: Int
    let weightedConcurrency: Int
    let scenarios: [String]
    let queue = "tenants"

    func run(rep: Int) throws {
        for scenario in Self.scenarios where scenarios.contains(scenario) {
            switch scenario {
            case "trickle": try trickle(rep: rep, flood: 0)
            case "noisy": try trickle(rep: rep, flood: flood)
            default: try weighted(rep: rep)
            }
        }
    }

    // MARK: - The trickle, on an empty queue or behind a flood

    private func trickle(rep: Int, flood: Int) throws {
        let server = try FaultServer()
        defer { server.stop() }
        let connection = try context.connect()
        defer { connection.close() }
        try prepare(connection)
        let gate = try DrainBench.Gate(connection)
        var floodIDs: ClosedRange<Int64>?
        if flood > 0 {
            try gate.close(queue: queue, destination: "", on: connection)
            let first = try context.lastJobID(connection) + 1
            try context.insertJobs(connection, count: flood, queue: queue, url: floodKind == .http ? server.baseURL + "/f" : nil, keys: .one("flood"))
            floodIDs = first...(try context.lastJobID(connection))
            try connection.simpleQuery("vacuum analyze courier.jobs")
        }
        let scenario = flood > 0 ? "noisy" : "trickle"
        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: concurrency,
                                          extraArguments: ["--allow-private-networks", "--shutdown-grace", "5s"],
                                          context: context, label: "tenants-\(scenario)-r\(rep)")
        do {
            try fleet.waitReady(connection)
            if flood > 0 {
                try connection.withTransaction { tx in
                    try gate.open(queue: queue, destination: "", on: tx)
                    try tx.execute(PostgresQuery(unsafeSQL: "select pg_notify('courier_jobs', $1::text)", binds: [queue]))
                }
                // The flood at full speed before the trickle starts.
                if floodKind == .http {
                    guard server.waitForRequests(min(flood, 5000), path: "/f", timeout: .seconds(60)) else {
                        throw BenchError("tenants: the flood did not start draining")
                    }
                } else {
                    usleep(1_000_000)
                }
            }
            let floodBefore = try floodServed(server, connection, ids: floodIDs)
            let windowStart = monotonicSeconds()
            let jobs = trickleRate * trickleSeconds
            var committed: [Double] = []
            committed.reserveCapacity(jobs)
            let sql = "select courier.enqueue(url => $1::text, method => 'GET', queue => $2::text, fairness_key => $3::text)"
            var next = windowStart
            for index in 0..<jobs {
                try connection.query(PostgresQuery(unsafeSQL: sql, binds: [
                    "\(server.baseURL)/t/\(index)", queue, "trickle-\(index % trickleKeys)",
                ]))
                committed.append(monotonicSeconds())
                next += 1 / Double(trickleRate)
                let wait = next - monotonicSeconds()
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
            var arrivals: [Int: Double] = [:]
            let settled = monotonicSeconds() + 120
            while arrivals.count < jobs && monotonicSeconds() < settled {
                usleep(50_000)
                arrivals = Self.trickleArrivals(server)
            }
            let windowEnd = arrivals.values.max() ?? monotonicSeconds()
            let floodServed = try floodServed(server, connection, ids: floodIDs) - floodBefore
            // One probe of jobs_fair_idx: was the flood still waiting when the trickle ended?
            let floodLeft = flood > 0 ? try connection.query(PostgresQuery(unsafeSQL: """
                select (select fairness_key from courier.jobs
                        where queue = $1::text and state = 'available' and held_since is null and not gated
                          and fairness_key = 'flood' order by queue, fairness_key limit 1) is not null
                """, binds: [queue])).rows[0].decode(0, as: Bool.self) : false
            try fleet.stop()
            guard arrivals.count == jobs else {
                throw BenchError("tenants \(scenario): only \(arrivals.count) of \(jobs) trickle requests arrived")
            }
            let pickup = (0..<jobs).map { (arrivals[$0]! - committed[$0]) * 1000 }
            let p50 = Stats.rounded(Stats.percentile(pickup, 50), 2), p99 = Stats.rounded(Stats.percentile(pickup, 99), 2)
            let window = windowEnd - windowStart
            var row: [String: Any] = [
                "scenario": scenario, "rep": rep, "workers": workers, "concurrency": concurrency,
                "trickle_keys": trickleKeys, "trickle_rate": trickleRate, "n": jobs, "pickup_p50_ms": p50, "pickup_p99_ms": p99,
                "pickup_max_ms": Stats.rounded(pickup.max() ?? .nan, 2),
            ]
            var line = String(format: "tenants %@ rep %d: %d keys, %d jobs/s in all, pickup p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                              scenario, rep, trickleKeys, trickleRate, p50, p99, pickup.max() ?? .nan)
            if flood > 0 {
                let rate = Double(floodServed) / window
                row["flood"] = flood
                row["flood_kind"] = floodKind.rawValue
                row["flood_jobs_per_s"] = Stats.rounded(rate, 1)
                row["flood_outlasted_trickle"] = floodLeft
                line += String(format: "; flood of %d %@ jobs: %.0f jobs/s during the trickle%@", flood, floodKind.rawValue, rate,
                               floodLeft ? "" : " (the flood ran out before the trickle ended: enlarge it)")
            }
            print(line)
            context.log.record("tenants", row)
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }

    /// How many of the flood's jobs were done: its requests read by the receiver, or for no-op jobs
    /// the highest flood id in the success archive past the first (the archive's primary key,
    /// searched backwards from the flood's last id: one probe, however big the archive).
    private func floodServed(_ server: FaultServer, _ connection: PostgresConnection, ids: ClosedRange<Int64>?) throws -> Int {
        guard let ids else { return 0 }
        if floodKind == .http { return server.requestCount(path: "/f") }
        let done = try connection.query(PostgresQuery(unsafeSQL: """
            select max(id) from courier.completed_jobs where id between $1::bigint and $2::bigint
            """, binds: [ids.lowerBound, ids.upperBound])).rows[0].decode(0, as: Int64?.self)
        return done.map { Int($0 - ids.lowerBound + 1) } ?? 0
    }

    /// The trickle's requests by index, at their arrival (CLOCK_MONOTONIC seconds); a repeated request counts once.
    private static func trickleArrivals(_ server: FaultServer) -> [Int: Double] {
        var arrivals: [Int: Double] = [:]
        for request in server.requests {
            guard request.path.hasPrefix("/t/"), let index = Int(request.path.dropFirst(3)), arrivals[index] == nil else { continue }
            arrivals[index] = Double(request.arrivalNanos) / 1e9
        }
        return arrivals
    }

    // MARK: - Weighted shares under full load

    private func weighted(rep: Int) throws {
        let server = try FaultServer()
        defer { server.stop() }
        let connection = try context.connect()
        defer { connection.close() }
        try prepare(connection)
        let gate = try DrainBench.Gate(connection)
        try gate.close(queue: queue, destination: "", on: connection)
        for (key, weight) in Self.weights {
            try connection.execute(PostgresQuery(unsafeSQL: "select courier.tenant_set(fairness_key => $1::text, weight => $2::int)",
                                                 binds: [key, weight]))
            server.setBehavior(.slow(delay: .milliseconds(weightedDelayMilliseconds), then: .json200), forPath: "/" + key)
            try context.insertJobs(connection, count: weightedBacklog, queue: queue, url: server.baseURL + "/" + key, keys: .one(key))
        }
        try connection.simpleQuery("vacuum analyze courier.jobs")
        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: weightedConcurrency,
                                          extraArguments: ["--allow-private-networks", "--shutdown-grace", "5s"],
                                          context: context, label: "tenants-weighted-r\(rep)")
        do {
            try fleet.waitReady(connection)
            try connection.withTransaction { tx in
                try gate.open(queue: queue, destination: "", on: tx)
                try tx.execute(PostgresQuery(unsafeSQL: "select pg_notify('courier_jobs', $1::text)", binds: [queue]))
            }
            let go = monotonicSeconds()
            // Minutes counted from 5 s after GO, when every worker has found the keys and fills its slots.
            let start = go + 5
            let end = start + Double(60 * weightedMinutes)
            while monotonicSeconds() < end { usleep(200_000) }
            // One probe of jobs_fair_idx per key: each key must still have had jobs waiting, or its share was not contested.
            var backlogged = true
            for (key, _) in Self.weights {
                backlogged = try backlogged && connection.query(PostgresQuery(unsafeSQL: """
                    select (select fairness_key from courier.jobs
                            where queue = $1::text and state = 'available' and held_since is null and not gated
                              and fairness_key = $2::text order by queue, fairness_key limit 1) is not null
                    """, binds: [queue, key])).rows[0].decode(0, as: Bool.self)
            }
            try fleet.stop()
            var counts = Array(repeating: [String: Int](), count: weightedMinutes)
            for request in server.requests {
                let at = Double(request.arrivalNanos) / 1e9
                guard at >= start, at < end else { continue }
                counts[min(weightedMinutes - 1, Int((at - start) / 60))][String(request.path.dropFirst()), default: 0] += 1
            }
            let totalWeight = Double(Self.weights.map(\.1).reduce(0, +))
            for (minute, perKey) in counts.enumerated() {
                let total = perKey.values.reduce(0, +)
                var shares: [String: Double] = [:]
                var worst = 0.0
                for (key, weight) in Self.weights {
                    let share = total > 0 ? 100 * Double(perKey[key] ?? 0) / Double(total) : .nan
                    shares[key] = Stats.rounded(share, 2)
                    worst = max(worst, abs(share - 100 * Double(weight) / totalWeight))
                }
                print(String(format: "tenants weighted rep %d minute %d: shares w1 %.1f%% w2 %.1f%% w4 %.1f%% (aim 14.3/28.6/57.1, off by at most %.1f points), %.0f starts/s%@",
                             rep, minute + 1, shares["w1"] ?? .nan, shares["w2"] ?? .nan, shares["w4"] ?? .nan, worst,
                             Double(total) / 60, backlogged ? "" : " (a key ran out of jobs: enlarge the backlog)"))
                context.log.record("tenants", [
                    "scenario": "weighted", "rep": rep, "minute": minute + 1, "workers": workers, "concurrency": weightedConcurrency,
                    "delay_ms": weightedDelayMilliseconds, "backlog_per_key": weightedBacklog, "shares_pct": shares,
                    "worst_points_off": Stats.rounded(worst, 2), "starts_per_s": Stats.rounded(Double(total) / 60, 1),
                    "every_key_backlogged": backlogged,
                ])
            }
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }

    // MARK: -

    private func prepare(_ connection: PostgresConnection) throws {
        try context.resetQueue(connection)
        try connection.simpleQuery("truncate courier.tenants")
    }

}
