import CourierStore
import CourierCore
import Foundation

/// The frames of `jobctl stats --watch`, laid out without I/O so tests can check them.
///
/// On a terminal: the alternate screen (so frames never reach the scrollback), each frame
/// drawn from the top-left corner and fitted to the terminal's size, the most important
/// lines first: a headline (throughput, workers, breakers, dead letters), then the queue
/// table, then the details as far as they fit. Elsewhere (a pipe, a file): plain frames,
/// one after another, with no escape codes at all.
enum StatsScreen {
    /// Enter the alternate screen and hide the cursor.
    static let enter = "\u{1B}[?1049h\u{1B}[?25l"
    /// Show the cursor and leave the alternate screen (the terminal shows what it had).
    static let leave = "\u{1B}[?25h\u{1B}[?1049l"
    /// Home the cursor; each line then ends with "erase to end of line", the frame with
    /// "erase below", so a shorter frame leaves nothing of the last one behind.
    static let home = "\u{1B}[H"
    static let eraseLine = "\u{1B}[K"
    static let eraseBelow = "\u{1B}[J"

    /// The one line that matters most: is work flowing, is anyone working, what is stuck.
    static func headline(_ view: Jobctl.StatsView) -> String {
        let open = (view.breakers["open"] ?? 0) + (view.breakers["half_open"] ?? 0)
        let dead = view.deadLetters.values.reduce(0, +)
        let waiting = view.queues.filter { $0.state == "available" }.reduce(0) { $0 + $1.count }
        let running = view.queues.filter { $0.state == "running" }.reduce(0) { $0 + $1.count }
        return "waiting \(waiting) · running \(running) · succeeded/min \(view.throughputPerMinute) · workers \(view.workers)"
            + " · breakers not closed \(open) · dead letters \(dead)"
    }

    /// One frame's lines. With a `size`, at most `size.rows - 1` lines (the cursor's line
    /// stays free, so the terminal never scrolls) of at most `size.columns` characters;
    /// the queue table is cut before the headline is, and the details before the table.
    static func frame(_ view: Jobctl.StatsView, title: String, size: TerminalSize?) -> [String] {
        let top = [title, headline(view), ""]
        let depth = Jobctl.depthLines(view)
        let details = [""] + Jobctl.detailLines(view)
        guard let size else { return top + depth + details }
        let budget = max(1, size.rows - 1)
        var lines = Array(top.prefix(budget))
        let room = budget - lines.count
        if depth.count <= room {
            lines += depth
        } else if room > 0 {
            // Keep the header and as many rows as fit, and say how many did not.
            let shown = max(0, room - 1)
            lines += depth.prefix(shown)
            lines.append("… \(depth.count - shown) more rows; a taller terminal shows them (or run 'jobctl stats')")
        }
        lines += details.prefix(max(0, budget - lines.count))
        return lines.map { fit($0, columns: size.columns) }
    }

    /// `line` cut to `columns` characters, with an ellipsis where it was cut.
    static func fit(_ line: String, columns: Int) -> String {
        guard line.count > columns else { return line }
        return columns <= 1 ? String(line.prefix(columns)) : String(line.prefix(columns - 1)) + "…"
    }

    /// The bytes that draw `lines` in place on a terminal.
    static func drawn(_ lines: [String]) -> String {
        home + lines.map { Quoting.printableLines($0) + eraseLine }.joined(separator: "\n") + eraseBelow
    }

    /// A frame for a pipe or file: plain lines and a blank line after.
    static func plain(_ lines: [String]) -> String {
        lines.map { Quoting.printableLines($0) }.joined(separator: "\n") + "\n\n"
    }
}

/// Restores the terminal when `stats --watch` is interrupted: a C signal handler cannot
/// capture, so the bytes to write are a global constant.
private let leaveBytes = Array(StatsScreen.leave.utf8)

private func restoreTerminalAndExit(_ signal: Int32) {
    leaveBytes.withUnsafeBufferPointer { _ = write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    _exit(0)
}

extension Jobctl {
    /// `stats --watch`: frames every `interval`, `frames` of them or until interrupted.
    static func watchStats(connection: ControlStore, interval: Duration, frames: Int?, json: Bool, io: ControlIO) throws {
        let onTerminal = io.outputIsTerminal && !json
        var previous: [Int32: sig_t?] = [:]
        if onTerminal {
            for number in [SIGINT, SIGTERM] { previous[number] = signal(number, restoreTerminalAndExit) }
            io.writeOut(StatsScreen.enter)
        }
        defer {
            if onTerminal {
                io.writeOut(StatsScreen.leave)
                for (number, handler) in previous { signal(number, handler ?? SIG_DFL) }
            }
        }
        var drawn = 0
        while true {
            let view = try statsView(on: connection)
            if json {
                try io.printJSON(view)
            } else {
                let title = "courier stats at \(Timestamp.format(Date())), every \(DurationParser.format(interval))"
                    + (onTerminal ? " (Ctrl-C to stop)" : "")
                if onTerminal {
                    io.writeOut(StatsScreen.drawn(StatsScreen.frame(view, title: title, size: io.terminalSize() ?? TerminalSize(rows: 24, columns: 80))))
                } else {
                    io.writeOut(StatsScreen.plain(StatsScreen.frame(view, title: title, size: nil)))
                }
            }
            drawn += 1
            if let frames, drawn >= frames { return }
            Thread.sleep(forTimeInterval: interval.timeInterval)
        }
    }
}
