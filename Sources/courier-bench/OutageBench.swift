import CourierStore
import CourierTestSupport
import Foundation
import Postgres

/// Outage at scale: `waiting` no-op jobs of one destination whose breaker opens (forced,
/// as `jobctl breaker open` does), stays open `openSeconds`, then closes (reset), while
/// `workers` workers run a steady `otherRate` jobs/s of HTTP GETs to two other loopback
/// destinations that answer after `otherDelayMs`. Prints:
/// - every worker's heartbeat delay, p99 and max: the gaps between successive
///   `courier.workers.heartbeat_at` values (polled every 50 ms; a one-row-per-worker table)
///   minus the worker's own heartbeat interval;
/// - lease losses on the other destinations: their archived jobs with attempt > 1, their
///   dead letters (aim 0 for both);
/// - how long holding and releasing took: from the open (the workers' start) until no
///   waiting job of the destination is unheld, and from the close until none is held, each
///   watched by one bounded probe of a partial index (`jobs_destination_idx`,
///   `jobs_held_idx`), never by counting; then how long the released backlog took to run.
struct OutageBench {
    let context: BenchContext
    let waiting: Int
    let openSeconds: Int
    let workers: Int
    let concurrency: Int
    let otherRate: Int
    let otherDelayMs: Int
    /// The workers' `--lease` (a shorter lease makes a stalled heartbeat cost a lease sooner).
    let lease: String
    let loaders: Int

    let queue = "bench"
    let outage = "job:outage"

    func run() throws {
        let slow = FaultServer.Behavior.slow(delay: .milliseconds(otherDelayMs), then: .json200)
        let servers = [try FaultServer(defaultBehavior: slow), try FaultServer(defaultBehavior: slow)]
        defer { servers.forEach { $0.stop() } }
        let urls = servers.map { $0.baseURL + "/ok" }
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        _ = try BreakersTable.force(destination: outage, action: .open, actor: "courier-bench", on: connection)
        let loadSeconds = try BulkJobs.load([.init(count: waiting, queue: queue, destination: outage, runAt: nil)],
                                            loaders: loaders, context: context)
        try connection.simpleQuery("vacuum analyze courier.jobs")
        print(String(format: "outage: %d jobs of %@ loaded in %.1f s behind its open breaker (not yet held)", waiting, outage, loadSeconds))

        let fleet = try WorkerFleet.start(count: workers, queue: queue, concurrency: concurrency,
                                          extraArguments: ["--shutdown-grace", "5s", "--allow-private-networks", "--lease", lease],
                                          context: context, label: "outage-w\(workers)-c\(concurrency)")
        let stop = StopFlag()
        var producerThread: Thread?
        do {
            try fleet.waitReady(connection, settle: 0)
            let tOpen = monotonicSeconds()
            // The other destinations' steady traffic, ten inserts a second.
            let producer = Thread { [context, queue, otherRate] in
                guard let db = try? context.connect() else { return }
                defer { db.close() }
                let start = monotonicSeconds()
                var sent = 0
                var turn = 0
                while !stop.isSet {
                    let due = Int((monotonicSeconds() - start) * Double(otherRate))
                    if due > sent {
                        let count = due - sent
                        if (try? context.insertJobs(db, count: count, queue: queue, url: urls[turn % urls.count])) == nil { break }
                        _ = try? db.query(PostgresQuery(unsafeSQL: "select pg_notify('courier_jobs', $1::text)", binds: [queue]))
                        sent += count
                        turn += 1
                    }
                    usleep(100_000)
                }
            }
            producer.start()
            producerThread = producer
            let beats = HeartbeatWatch()
            var holdSeconds: Double?
            var releaseSeconds: Double?
            var drainSeconds: Double?
            var tClose: Double?
            var lastPrint = tOpen
            while drainSeconds == nil {
                let now = monotonicSeconds()
                try beats.sample(connection)
                if holdSeconds == nil, try !exists(connection, "state = 'available' and held_since is null") {
                    holdSeconds = now - tOpen
                    print(String(format: "outage: %d jobs held in %.2f s", waiting, holdSeconds!))
                }
                if tClose == nil, now - tOpen >= Double(openSeconds) {
                    _ = try BreakersTable.force(destination: outage, action: .reset, actor: "courier-bench", on: connection)
                    tClose = monotonicSeconds()
                    print(String(format: "outage: breaker closed after %.1f s open", tClose! - tOpen))
                }
                if let tClose, releaseSeconds == nil, try !exists(connection, "held_since is not null") {
                    releaseSeconds = now - tClose
                    print(String(format: "outage: held jobs released in %.2f s", releaseSeconds!))
                }
                if let tClose, releaseSeconds != nil, try !exists(connection, "state = 'available'"),
                   try !runningOutage(connection) {
                    drainSeconds = now - tClose
                }
                if now - lastPrint >= 10 {
                    lastPrint = now
                    print(String(format: "outage: t=%.0f s  %@", now - tOpen, beats.summaryLine()))
                    fflush(nil)
                }
                guard now - tOpen < Double(openSeconds) + 3600 else { throw BenchError("outage: not done an hour after the close") }
                usleep(50_000)
            }
            stop.set()
            while !producer.isFinished { usleep(50_000) }
            // Let the other destinations' last jobs finish, then stop.
            let settleEnd = monotonicSeconds() + Double(otherDelayMs) / 1000 + 10
            while monotonicSeconds() < settleEnd, try exists(connection, nil, other: true) {
                try beats.sample(connection)   // a pause in sampling would read as a late heartbeat
                usleep(50_000)
            }
            try beats.sample(connection)
            try fleet.stop()
            let losses = try connection.query(PostgresQuery(unsafeSQL: """
                select count(*) filter (where attempt > 1), count(*) from courier.completed_jobs where destination <> $1::text
                """, binds: [outage])).rows[0]
            let retried = try losses.decode(0, as: Int.self)
            let otherDone = try losses.decode(1, as: Int.self)
            let otherDead = try context.count(connection, "select count(*) from courier.dead_letters")
            let outageDone = try connection.query(PostgresQuery(unsafeSQL: "select count(*) from courier.completed_jobs where destination = $1::text",
                                                                binds: [outage])).rows[0].decode(0, as: Int.self)
            let requests = servers.reduce(0) { $0 + $1.requestCount() }
            print("outage: heartbeat delay per worker: \(beats.summaryLine())")
            print(String(format: "outage: hold %.2f s, release %.2f s, backlog ran %.2f s after the close; other destinations: %d done, %d with attempt > 1 (lease losses), %d dead letters, %d requests; %d of %d outage jobs done",
                         holdSeconds ?? .nan, releaseSeconds ?? .nan, drainSeconds ?? .nan, otherDone, retried, otherDead, requests, outageDone, waiting))
            var perWorker: [[String: Any]] = []
            for (index, worker) in beats.workers.enumerated() {
                perWorker.append(["worker": index, "heartbeats": worker.gaps.count,
                                  "interval_ms": worker.intervalMs,
                                  "delay_p99_ms": Stats.json(worker.delayP99, 1), "delay_max_ms": Stats.json(worker.delayMax, 1)])
            }
            context.log.record("outage", [
                "waiting": waiting, "open_seconds": openSeconds, "workers": workers, "concurrency": concurrency,
                "other_rate": otherRate, "other_delay_ms": otherDelayMs, "lease": lease,
                "load_seconds": Stats.rounded(loadSeconds, 2),
                "hold_seconds": holdSeconds.map { Stats.rounded($0, 2) } ?? NSNull(),
                "release_seconds": releaseSeconds.map { Stats.rounded($0, 2) } ?? NSNull(),
                "backlog_ran_seconds": drainSeconds.map { Stats.rounded($0, 2) } ?? NSNull(),
                "other_done": otherDone, "other_attempt_gt1": retried, "other_dead": otherDead, "outage_done": outageDone,
                "heartbeat": perWorker,
                "heartbeat_delay_p99_ms_max": Stats.json(beats.workers.map(\.delayP99).filter(\.isFinite).max() ?? .nan, 1),
                "heartbeat_delay_max_ms": Stats.json(beats.workers.map(\.delayMax).filter(\.isFinite).max() ?? .nan, 1),
            ])
            guard outageDone == waiting else { throw BenchError("outage: \(outageDone) of \(waiting) outage jobs completed") }
        } catch {
            stop.set()
            if let producerThread { while !producerThread.isFinished { usleep(50_000) } }
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }

    /// One bounded probe: does a job of the outage destination (or, with `other`, of any other) match?
    private func exists(_ connection: PostgresConnection, _ condition: String?, other: Bool = false) throws -> Bool {
        if other {
            return try connection.query(PostgresQuery(unsafeSQL: """
                select exists (select 1 from courier.jobs where state = 'running')
                """)).rows[0].decode(0, as: Bool.self)
        }
        return try connection.query(PostgresQuery(unsafeSQL: """
            select exists (select 1 from courier.jobs where destination = $1::text and \(condition ?? "true"))
            """, binds: [outage])).rows[0].decode(0, as: Bool.self)
    }

    /// Whether an outage job is running (through the running-jobs index: bounded by the fleet's slots).
    private func runningOutage(_ connection: PostgresConnection) throws -> Bool {
        try connection.query(PostgresQuery(unsafeSQL: """
            select exists (select 1 from courier.jobs where state = 'running' and destination = $1::text)
            """, binds: [outage])).rows[0].decode(0, as: Bool.self)
    }
}

/// Successive heartbeats of every worker, from `courier.workers` (one row per worker).
final class HeartbeatWatch {
    struct Worker {
        var id: String
        var intervalMs: Int
        var last: Date?
        var gaps: [Double] = []
        /// Delay of a heartbeat: how much later than its interval it came, in ms (never negative).
        var delays: [Double] { gaps.map { max(0, $0 - Double(intervalMs)) } }
        var delayP99: Double { delays.isEmpty ? .nan : Stats.percentile(delays, 99) }
        var delayMax: Double { delays.max() ?? .nan }
    }

    private(set) var workers: [Worker] = []

    func sample(_ connection: PostgresConnection) throws {
        let rows = try connection.query(PostgresQuery(unsafeSQL: """
            select id::text, heartbeat_interval_ms, heartbeat_at from courier.workers order by started_at, id
            """)).rows
        for row in rows {
            let id = try row.decode(0, as: String.self)
            let interval = try row.decode(1, as: Int.self)
            let at = try row.decode(2, as: Date.self)
            if let index = workers.firstIndex(where: { $0.id == id }) {
                if let last = workers[index].last, at > last {
                    workers[index].gaps.append(at.timeIntervalSince(last) * 1000)
                }
                workers[index].last = at
            } else {
                workers.append(Worker(id: id, intervalMs: interval, last: at))
            }
        }
    }

    func summaryLine() -> String {
        workers.enumerated().map { index, w in
            String(format: "w%d: %d beats, delay p99 %.0f ms, max %.0f ms", index, w.gaps.count, w.delayP99, w.delayMax)
        }.joined(separator: "; ")
    }
}
