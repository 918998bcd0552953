import CourierTestSupport
import Foundation
import Postgres

/// Pickup latency: one idle worker; single enqueues through SQL `courier.enqueue`,
/// `interval` apart, each its own transaction; per job, the time from the moment
/// COMMIT returned in this process to the moment the job's request had been read by
/// the loopback FaultServer in this process (both on CLOCK_MONOTONIC). The time from
/// just before the enqueue call is reported too: that is what the peers harness
/// measures (its producer stamps time.time() before the enqueue call).
///
/// `scheduledAhead` jobs are first inserted in the same queue to run a day later, and the
/// table analyzed: the scheduled backlog a production queue carries (retries in backoff,
/// sends planned ahead), which a claim has to pass over to find the one due job. Loaded as
/// the backlog bench loads its scheduled jobs (`BulkJobs`), whose columns older schemas have too.
struct LatencyBench {
    let context: BenchContext
    let jobs: Int
    let intervalMilliseconds: Int
    var scheduledAhead = 0

    func run(rep: Int) throws {
        let server = try FaultServer()
        defer { server.stop() }
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        if scheduledAhead > 0 {
            let tomorrow = try BulkJobs.runAt(secondsFromNow: 86_400, on: connection)
            try BulkJobs.load([.init(count: scheduledAhead, queue: "lat", destination: "job:noop", runAt: tomorrow)],
                              loaders: 1, context: context)
            try connection.simpleQuery("analyze courier.jobs")
        }
        let fleet = try WorkerFleet.start(count: 1, queue: "lat", concurrency: 32,
                                          extraArguments: ["--allow-private-networks", "--shutdown-grace", "5s"],
                                          context: context, label: "latency-r\(rep)")
        do {
            try fleet.waitReady(connection, settle: 2.0)   // the peers wait 2 s for their idle LISTEN
            var before: [Double] = []
            var committed: [Double] = []
            let sql = "select courier.enqueue(url => $1::text, method => 'GET', queue => 'lat')"
            var next = monotonicSeconds()
            for index in 0..<jobs {
                let t = monotonicSeconds()
                try connection.query(PostgresQuery(unsafeSQL: sql, binds: ["\(server.baseURL)/lat/\(index)"]))
                committed.append(monotonicSeconds())
                before.append(t)
                next += Double(intervalMilliseconds) / 1000
                let wait = next - monotonicSeconds()
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            }
            guard server.waitForRequests(jobs, timeout: .seconds(30)) else {
                throw BenchError("only \(server.requestCount()) of \(jobs) requests arrived")
            }
            var arrival: [Int: Double] = [:]
            for request in server.requests {
                guard request.path.hasPrefix("/lat/"), let index = Int(request.path.dropFirst(5)), arrival[index] == nil else { continue }
                arrival[index] = Double(request.arrivalNanos) / 1e9
            }
            guard arrival.count == jobs else { throw BenchError("\(arrival.count) distinct jobs arrived, expected \(jobs)") }
            let fromCommit = (0..<jobs).map { (arrival[$0]! - committed[$0]) * 1000 }
            let fromEnqueue = (0..<jobs).map { (arrival[$0]! - before[$0]) * 1000 }
            let enqueueCost = (0..<jobs).map { (committed[$0] - before[$0]) * 1000 }
            try fleet.stop()
            func summary(_ values: [Double]) -> [String: Double] {
                ["p50_ms": Stats.rounded(Stats.percentile(values, 50)), "p90_ms": Stats.rounded(Stats.percentile(values, 90)),
                 "p99_ms": Stats.rounded(Stats.percentile(values, 99)), "max_ms": Stats.rounded(values.max() ?? .nan)]
            }
            context.log.record("latency", [
                "rep": rep, "n": jobs, "interval_ms": intervalMilliseconds, "workers": 1, "concurrency": 32,
                "scheduled_ahead": scheduledAhead,
                "from_commit": summary(fromCommit), "from_enqueue_call": summary(fromEnqueue),
                "enqueue_commit_ms": summary(enqueueCost), "connections": server.connectionCount,
            ])
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }
}
