import Foundation
import Glibc

/// Reads CPU and memory figures from /proc, for the CPU split and the memory figure.
enum ProcStats {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// VmRSS and VmHWM of a process, in KiB.
    static func memoryKB(pid: pid_t) -> (rss: Int, hwm: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
        }
        guard let rss = field("VmRSS"), let hwm = field("VmHWM") else { return nil }
        return (rss, hwm)
    }

    /// Threads of a process.
    static func threads(pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return nil }
        return line.split(separator: "\t").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// (parent pid, user+system CPU seconds) of a process.
    static func cpu(pid: pid_t) -> (ppid: pid_t, seconds: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "comm)": state ppid ... utime(14) stime(15), counted from 1 overall.
        let rest = text[text.index(after: close)...].split(separator: " ")
        guard rest.count > 13, let ppid = Int32(rest[1]), let utime = Double(rest[11]), let stime = Double(rest[12]) else { return nil }
        return (ppid, (utime + stime) / ticksPerSecond)
    }

    /// CPU seconds of a process tree rooted at `root` (the root and its direct children),
    /// e.g. a PostgreSQL postmaster and its backends.
    static func treeCPU(root: pid_t) -> Double {
        var total = cpu(pid: root)?.seconds ?? 0
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), pid != root, let stat = cpu(pid: pid), stat.ppid == root else { continue }
            total += stat.seconds
        }
        return total
    }

    /// Machine-wide CPU seconds from /proc/stat: busy (user+nice+system+irq+softirq),
    /// idle, iowait and steal, summed over all CPUs.
    struct Machine {
        var busy: Double
        var idle: Double
        var iowait: Double
        var steal: Double
        var total: Double { busy + idle + iowait + steal }

        static func now() -> Machine {
            guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else {
                return Machine(busy: 0, idle: 0, iowait: 0, steal: 0)
            }
            let v = line.split(separator: " ").dropFirst().compactMap { Double($0) }.map { $0 / ProcStats.ticksPerSecond }
            guard v.count >= 8 else { return Machine(busy: 0, idle: 0, iowait: 0, steal: 0) }
            return Machine(busy: v[0] + v[1] + v[2] + v[5] + v[6], idle: v[3], iowait: v[4], steal: v[7])
        }

        static func - (a: Machine, b: Machine) -> Machine {
            Machine(busy: a.busy - b.busy, idle: a.idle - b.idle, iowait: a.iowait - b.iowait, steal: a.steal - b.steal)
        }
    }

    /// The postmaster pid of the cluster whose data directory is `dataDirectory`.
    static func postmasterPID(dataDirectory: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { Int32($0) }
    }
}

/// CPU used between two moments, split by who used it.
struct CPUSplit {
    var workers: Double
    var postgres: Double
    var machine: ProcStats.Machine

    /// Cores in use on average over `seconds`, per group; "other" is everything else busy on the machine.
    func summary(seconds: Double) -> [String: Any] {
        let other = max(0, machine.busy - workers - postgres)
        return [
            "workers_cores": Stats.rounded(workers / seconds, 2),
            "postgres_cores": Stats.rounded(postgres / seconds, 2),
            "other_cores": Stats.rounded(other / seconds, 2),
            "idle_cores": Stats.rounded((machine.idle + machine.iowait) / seconds, 2),
            "steal_cores": Stats.rounded(machine.steal / seconds, 2),
        ]
    }
}

/// Takes CPU snapshots of a set of worker processes, the benchmark's PostgreSQL and the machine.
struct CPUSampler {
    let workerPIDs: [pid_t]
    let postmaster: pid_t?

    struct Snapshot {
        var workers: Double
        var postgres: Double
        var machine: ProcStats.Machine
    }

    func snapshot() -> Snapshot {
        Snapshot(workers: workerPIDs.reduce(0) { $0 + (ProcStats.cpu(pid: $1)?.seconds ?? 0) },
                 postgres: postmaster.map { ProcStats.treeCPU(root: $0) } ?? 0,
                 machine: .now())
    }

    static func split(_ a: Snapshot, _ b: Snapshot) -> CPUSplit {
        CPUSplit(workers: b.workers - a.workers, postgres: b.postgres - a.postgres, machine: b.machine - a.machine)
    }
}
