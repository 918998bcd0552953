import CourierTestSupport
import Foundation
import Postgres

/// Fair claiming: a trickle destination's pickup latency behind another destination's
/// backlog, both without a policy. `backlog` GETs of a loopback FaultServer are inserted
/// first (one statement); one worker starts draining them; then `jobs` single enqueues of
/// a second FaultServer, `interval` apart. Per trickle job, the time from COMMIT returning
/// to its request being read (both on CLOCK_MONOTONIC), and how many backlog requests had
/// arrived when the trickle's last one did (counted by the receiver: nothing polls a table).
struct FairBench {
    let context: BenchContext
    let backlog: Int
    let jobs: Int
    let intervalMilliseconds: Int
    let concurrency: Int

    func run(rep: Int) throws {
        let backlogServer = try FaultServer()
        defer { backlogServer.stop() }
        let trickleServer = try FaultServer()
        defer { trickleServer.stop() }
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        try context.insertJobs(connection, count: backlog, queue: "fair", url: backlogServer.baseURL + "/a")
        try connection.simpleQuery("vacuum analyze courier.jobs")
        let fleet = try WorkerFleet.start(count: 1, queue: "fair", concurrency: concurrency,
                                          extraArguments: ["--allow-private-networks", "--shutdown-grace", "5s"],
                                          context: context, label: "fair-r\(rep)")
        do {
            try fleet.waitReady(connection, settle: 0.5)
            guard backlogServer.waitForRequests(min(backlog, 1000), timeout: .seconds(30)) else {
                throw BenchError("fair: the backlog did not start draining")
            }
            var committed: [Double] = []
            let sql = "select courier.enqueue(url => $1::text, method => 'GET', queue => 'fair')"
            var next = monotonicSeconds()
            for index in 0..<jobs {
                try connection.query(PostgresQuery(unsafeSQL: sql, binds: ["\(trickleServer.baseURL)/b/\(index)"]))
                committed.append(monotonicSeconds())
                next += Double(intervalMilliseconds) / 1000
                let wait = next - monotonicSeconds()
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
            guard trickleServer.waitForRequests(jobs, timeout: .seconds(600)) else {
                throw BenchError("fair: only \(trickleServer.requestCount()) of \(jobs) trickle requests arrived")
            }
            let backlogServed = backlogServer.requestCount()
            var arrival: [Int: Double] = [:]
            for request in trickleServer.requests {
                guard request.path.hasPrefix("/b/"), let index = Int(request.path.dropFirst(3)), arrival[index] == nil else { continue }
                arrival[index] = Double(request.arrivalNanos) / 1e9
            }
            try fleet.stop()
            let pickup = (0..<jobs).compactMap { index in arrival[index].map { ($0 - committed[index]) * 1000 } }
            let p50 = Stats.rounded(Stats.percentile(pickup, 50)), p99 = Stats.rounded(Stats.percentile(pickup, 99))
            print(String(format: "fair rep %d: trickle pickup behind a %d-job backlog: p50 %.1f ms, p99 %.1f ms, max %.1f ms; backlog requests served by then %d",
                         rep, backlog, p50, p99, pickup.max() ?? .nan, backlogServed))
            context.log.record("fair", ["rep": rep, "backlog": backlog, "n": jobs, "interval_ms": intervalMilliseconds,
                                        "concurrency": concurrency, "pickup_p50_ms": p50, "pickup_p99_ms": p99,
                                        "pickup_max_ms": Stats.rounded(pickup.max() ?? .nan), "backlog_served": backlogServed])
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }
}
