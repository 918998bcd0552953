import Foundation
import Postgres

/// `jobworker` processes started the way an operator starts them, one log file each.
struct WorkerFleet {
    let children: [ChildProcess]

    /// The workers' `--log-level`: warning, or `COURIER_BENCH_LOG_LEVEL` (benchmark knob, to see why a run stalled).
    static var logLevel: String { ProcessInfo.processInfo.environment["COURIER_BENCH_LOG_LEVEL"] ?? "warning" }

    var pids: [pid_t] { children.map(\.pid) }

    static func start(count: Int, queue: String, concurrency: Int, extraArguments: [String] = [],
                      context: BenchContext, label: String) throws -> WorkerFleet {
        var children: [ChildProcess] = []
        for index in 0..<count {
            var arguments = ["--database-url", context.connectionString, "--queues", queue,
                             "--concurrency", String(concurrency), "--log-level", WorkerFleet.logLevel] + extraArguments
            if let base = WorkerCounters.metricsBase { arguments += ["--metrics-addr", "127.0.0.1:\(base + index)"] }
            let program = context.binDirectory + "/jobworker"
            let wrapper = WorkerCounters.wrapper
            let logPath = context.workDirectory + "/jobworker-\(label)-\(index).log"
            if wrapper.isEmpty {
                children.append(try ChildProcess(program, arguments, logPath: logPath))
            } else {
                let command = wrapper.map { $0.replacingOccurrences(of: "{label}", with: "\(label)-\(index)") }
                children.append(try ChildProcess(command[0], Array(command.dropFirst()) + [program] + arguments, logPath: logPath))
            }
        }
        return WorkerFleet(children: children)
    }

    /// Waits until every worker has registered and has its claim, maintenance and
    /// listen connections open (the acknowledging one opens at the first write), then
    /// lets them settle idle.
    func waitReady(_ connection: PostgresConnection, settle: Double = 0.5, timeout: Double = 30) throws {
        let end = monotonicSeconds() + timeout
        while true {
            // Through a wrapper (a profiler) the registered pid is the wrapped worker's: count every live registration.
            let registered = try connection.query(PostgresQuery(unsafeSQL: """
                select count(*) from courier.workers where pid = any($1) or ($2 and stopping_at is null)
                """, binds: [pids.map { Int($0) }, !WorkerCounters.wrapper.isEmpty])).rows[0].decode(0, as: Int.self)
            let sessions = try connection.query(PostgresQuery(unsafeSQL: """
                select count(*) from pg_stat_activity where application_name = 'jobworker' and datname = current_database()
                """)).rows[0].decode(0, as: Int.self)
            if registered == children.count && sessions >= 3 * children.count { break }
            for child in children where child.wait(timeout: 0) != nil {
                throw BenchError("jobworker exited early (status \(child.exitStatus ?? -1)); log \(child.logPath):\n\(child.output.suffix(2000))")
            }
            guard monotonicSeconds() < end else { throw BenchError("workers did not become ready within \(Int(timeout)) s") }
            usleep(20_000)
        }
        usleep(UInt32(settle * 1_000_000))
    }

    /// SIGTERM (graceful shutdown), then checks every worker exited 0.
    func stop() throws {
        children.forEach { $0.signal(SIGTERM) }
        var failures: [String] = []
        for child in children {
            child.stop(grace: 40)
            if child.exitStatus != 0 {
                failures.append("jobworker \(child.pid) exited \(child.exitStatus ?? -1); log \(child.logPath)")
            }
        }
        if !failures.isEmpty { throw BenchError(failures.joined(separator: "\n")) }
    }

    /// Largest VmHWM among the workers, in KiB.
    var peakRSSKB: Int { pids.compactMap { ProcStats.memoryKB(pid: $0)?.hwm }.max() ?? 0 }
}
