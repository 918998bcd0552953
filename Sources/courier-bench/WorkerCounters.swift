import Foundation

/// Counters of a drain beside its throughput, to see where a worker's time goes:
/// context switches per thread name (from /proc/PID/task/*/status: a wake-up of a
/// sleeping thread is a voluntary switch) and, when the workers serve /metrics,
/// claim statements, jobs per claim and acknowledgement flushes.
///
/// Knobs (environment, benchmark only):
/// - `COURIER_BENCH_METRICS_BASE=PORT`: worker i serves /metrics on 127.0.0.1:PORT+i, scraped
///   after the drain (with `curl`);
/// - `COURIER_BENCH_WRAP="perf record -g -o /tmp/x.data --"`: each jobworker is started
///   through this command (for CPU profiles; the CPU split then counts the wrapper).
enum WorkerCounters {
    static var metricsBase: Int? { ProcessInfo.processInfo.environment["COURIER_BENCH_METRICS_BASE"].flatMap { Int($0) } }
    static var wrapper: [String] {
        (ProcessInfo.processInfo.environment["COURIER_BENCH_WRAP"] ?? "").split(separator: " ").map(String.init)
    }

    /// Voluntary and involuntary context switches of every thread of `pids`, summed by thread name.
    static func switches(pids: [pid_t]) -> [String: (voluntary: Int, involuntary: Int)] {
        var sums: [String: (voluntary: Int, involuntary: Int)] = [:]
        for pid in pids {
            let dir = "/proc/\(pid)/task"
            for task in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                guard let text = try? String(contentsOfFile: "\(dir)/\(task)/status", encoding: .utf8) else { continue }
                var name = "?", voluntary = 0, involuntary = 0
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2 else { continue }
                    let value = parts[1].trimmingCharacters(in: .whitespaces)
                    switch parts[0] {
                    case "Name": name = value
                    case "voluntary_ctxt_switches": voluntary = Int(value) ?? 0
                    case "nonvoluntary_ctxt_switches": involuntary = Int(value) ?? 0
                    default: break
                    }
                }
                // Swift's cooperative pool threads are numbered; count them as one group.
                if name.hasPrefix("TaskPool") || name.allSatisfy(\.isNumber) { name = "pool" }
                let old = sums[name] ?? (0, 0)
                sums[name] = (old.voluntary + voluntary, old.involuntary + involuntary)
            }
        }
        return sums
    }

    /// `after - before` per thread name, as JSON-ready per-1000-jobs figures.
    static func switchesPerThousand(_ before: [String: (voluntary: Int, involuntary: Int)],
                                    _ after: [String: (voluntary: Int, involuntary: Int)], jobs: Int) -> [String: Any] {
        var row: [String: Any] = [:]
        for (name, end) in after {
            let start = before[name] ?? (0, 0)
            let total = (end.voluntary - start.voluntary) + (end.involuntary - start.involuntary)
            guard total > 0 else { continue }
            row[name] = Stats.rounded(Double(total) * 1000 / Double(jobs), 1)
        }
        return row
    }

    /// Selected samples of each worker's /metrics page, summed over workers.
    static func scrape(workers: Int, workDirectory: String) -> [String: Double] {
        guard let base = metricsBase else { return [:] }
        let wanted = ["courier_claim_batch_size_count", "courier_claim_batch_size_sum", "courier_ack_latency_seconds_count",
                      "courier_ack_latency_seconds_sum", "courier_acked_jobs_total"]
        var sums: [String: Double] = [:]
        for index in 0..<workers {
            let path = workDirectory + "/metrics-\(index).txt"
            try? FileManager.default.removeItem(atPath: path)
            guard let curl = try? ChildProcess("/usr/bin/curl", ["-s", "-o", path, "http://127.0.0.1:\(base + index)/metrics"],
                                               logPath: workDirectory + "/curl.log"),
                  curl.wait(timeout: 10) == 0,
                  let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                guard parts.count >= 2, wanted.contains(String(parts[0])), let value = Double(parts[1]) else { continue }
                sums[String(parts[0]), default: 0] += value
            }
        }
        return sums
    }
}
