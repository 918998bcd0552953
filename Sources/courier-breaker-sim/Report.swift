import CourierCore
import Foundation

/// Formats results: one table per fleet size, the three breaker modes side by side.
enum Report {
    static func seconds(_ value: Double?) -> String {
        value.map { String(format: "%.2f s", $0) } ?? "—"
    }

    static func rows(_ results: [ScenarioResult]) -> [(String, (ScenarioResult) -> String)] {
        [
            ("time to detect (first failure → open)", { r in
                r.mode == .process
                    ? "\(seconds(r.detectSeconds)) first, \(r.allOpenSeconds.map { seconds($0) } ?? "not all") all"
                    : seconds(r.detectSeconds) }),
            ("requests/min reaching the dead destination while open", { r in String(format: "%.0f", r.requestsPerMinuteWhileOpen) }),
            ("requests during the whole outage", { r in String(r.outageRequests) }),
            ("probes per recovery", { r in r.probes.map(String.init) ?? "—" }),
            ("failed attempts spent", { r in String(r.failedAttempts) }),
            ("jobs enqueued", { r in String(r.enqueued) }),
            ("jobs completed after recovery", { r in String(r.completedAfterRecovery) }),
            ("jobs completed in all", { r in String(r.completed) }),
            ("jobs dead-lettered", { r in String(r.deadLettered) }),
            ("time to drain after recovery", { r in r.drainSeconds.map { seconds($0) } ?? "timed out" }),
        ]
    }

    /// Markdown tables, one per fleet size.
    static func markdown(_ results: [ScenarioResult], modes: [BreakerMode]) -> String {
        var out = ""
        for fleet in Array(Set(results.map(\.fleet))).sorted() {
            let set = modes.compactMap { mode in results.first { $0.fleet == fleet && $0.mode == mode } }
            out += "#### W = \(fleet) worker\(fleet == 1 ? "" : "s")\n\n"
            out += "| | " + set.map(\.mode.title).joined(separator: " | ") + " |\n"
            out += "|---|" + set.map { _ in "---:" }.joined(separator: "|") + "|\n"
            for (title, cell) in rows(results) {
                out += "| \(title) | " + set.map(cell).joined(separator: " | ") + " |\n"
            }
            out += "\n"
        }
        return out
    }

    /// Plain-text tables for the terminal.
    static func text(_ results: [ScenarioResult], modes: [BreakerMode]) -> String {
        var out = ""
        for fleet in Array(Set(results.map(\.fleet))).sorted() {
            let set = modes.compactMap { mode in results.first { $0.fleet == fleet && $0.mode == mode } }
            let header = ["W = \(fleet)"] + set.map(\.mode.title)
            var lines = [header]
            for (title, cell) in rows(results) { lines.append([title] + set.map(cell)) }
            let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
            for (index, line) in lines.enumerated() {
                out += line.enumerated().map { column, text in
                    column == 0 ? text.padding(toLength: widths[0], withPad: " ", startingAt: 0)
                        : String(repeating: " ", count: widths[column] - text.count) + text
                }.joined(separator: "  ") + "\n"
                if index == 0 { out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
            }
            out += "\n"
        }
        return out
    }
}
