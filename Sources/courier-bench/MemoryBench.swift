import CourierTestSupport
import Foundation
import Postgres

/// Worker memory: RSS of one `jobworker --concurrency N` while N slow requests are in
/// flight. The requests go to two loopback FaultServers (two ports: libcurl caps
/// connections per host and port, 128 by default) that answer after `delay` seconds.
struct MemoryBench {
    let context: BenchContext
    let concurrency: Int
    let delaySeconds: Int

    func run() throws {
        let slow = FaultServer.Behavior.slow(delay: .seconds(delaySeconds), then: .json200)
        let servers = [try FaultServer(defaultBehavior: slow), try FaultServer(defaultBehavior: slow)]
        defer { servers.forEach { $0.stop() } }
        let connection = try context.connect()
        defer { connection.close() }
        try context.resetQueue(connection)
        let fleet = try WorkerFleet.start(count: 1, queue: "mem", concurrency: concurrency,
                                          extraArguments: ["--allow-private-networks", "--shutdown-grace", "5s"],
                                          context: context, label: "memory")
        do {
            try fleet.waitReady(connection, settle: 1.0)
            let pid = fleet.pids[0]
            let idle = ProcStats.memoryKB(pid: pid)?.rss ?? 0
            let perServer = concurrency / servers.count
            try connection.withTransaction { tx in
                for (index, server) in servers.enumerated() {
                    let count = index == servers.count - 1 ? concurrency - perServer * (servers.count - 1) : perServer
                    try context.insertJobs(tx, count: count, queue: "mem", url: server.baseURL + "/slow")
                }
                try tx.query("select pg_notify('courier_jobs', 'mem')")
            }
            let end = monotonicSeconds() + Double(delaySeconds) - 1
            var inFlight = 0
            while monotonicSeconds() < end {
                inFlight = servers.reduce(0) { $0 + $1.requestCount() }
                if inFlight >= concurrency { break }
                usleep(20_000)
            }
            var peakLoaded = 0
            var threads = 0
            let sampleEnd = min(end, monotonicSeconds() + 1.5)
            repeat {
                peakLoaded = max(peakLoaded, ProcStats.memoryKB(pid: pid)?.rss ?? 0)
                threads = max(threads, ProcStats.threads(pid: pid) ?? 0)
                usleep(100_000)
            } while monotonicSeconds() < sampleEnd
            // Let the slow answers come back and the jobs finish, then stop the worker.
            let drainEnd = monotonicSeconds() + Double(delaySeconds) + 30
            while try context.count(connection, "select count(*) from courier.jobs where queue = 'mem'") > 0 {
                guard monotonicSeconds() < drainEnd else { throw BenchError("slow jobs did not finish") }
                usleep(100_000)
            }
            let memory = ProcStats.memoryKB(pid: pid)
            try fleet.stop()
            let succeeded = try context.count(connection, "select count(*) from courier.completed_jobs where queue = 'mem' and status = 200")
            context.log.record("memory", [
                "concurrency": concurrency, "delay_s": delaySeconds, "requests_in_flight": inFlight,
                "idle_rss_kb": idle, "inflight_rss_kb": peakLoaded, "after_rss_kb": memory?.rss ?? 0, "hwm_kb": memory?.hwm ?? 0,
                "threads": threads, "succeeded": succeeded,
            ])
        } catch {
            fleet.children.forEach { $0.stop(grace: 5) }
            throw error
        }
    }
}
