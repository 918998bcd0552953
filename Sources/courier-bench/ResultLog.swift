import Foundation

/// Appends one JSON object per measurement to the run's `courier.jsonl` and echoes it,
/// so bench/report.py can build RESULTS.md from the raw rows.
struct ResultLog {
    let path: String

    func record(_ bench: String, _ fields: [String: Any]) {
        var row = fields
        row["bench"] = bench
        row["ts"] = ISO8601DateFormatter().string(from: Date())
        guard let data = try? JSONSerialization.data(withJSONObject: row, options: [.sortedKeys]) else {
            FileHandle.standardError.write(Data("courier-bench: cannot encode a result row\n".utf8))
            return
        }
        var line = data
        line.append(UInt8(ascii: "\n"))
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(line)
            handle.closeFile()
        }
        FileHandle.standardOutput.write(line)
    }
}

/// Small statistics helpers.
enum Stats {
    /// Percentile with linear interpolation between closest ranks (numpy's "linear"),
    /// the same method as the peers harness (common.pct).
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let k = Double(sorted.count - 1) * p / 100
        let f = Int(k)
        let c = min(f + 1, sorted.count - 1)
        return sorted[f] + (sorted[c] - sorted[f]) * (k - Double(f))
    }

    /// `value` rounded, or JSON null when it is not finite (JSONSerialization refuses NaN).
    static func json(_ value: Double, _ places: Int = 3) -> Any {
        value.isFinite ? rounded(value, places) : NSNull()
    }

    static func rounded(_ value: Double, _ places: Int = 3) -> Double {
        let scale = pow(10, Double(places))
        return (value * scale).rounded() / scale
    }
}

/// Monotonic time in seconds (CLOCK_MONOTONIC), the clock every interval here is taken on.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
