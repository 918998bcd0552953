import Foundation

/// A one-line progress display on standard error, only when it is a terminal:
/// done, left, rate and time left, redrawn in place at most ten times a second.
final class Progress: @unchecked Sendable {
    private let io: ControlIO
    private let total: Int
    private let label: String
    private let started = Date()
    private var lastDraw = Date.distantPast
    private var drawn = false

    init(io: ControlIO, total: Int, label: String) {
        self.io = io
        self.total = total
        self.label = label
    }

    func update(_ done: Int) {
        guard io.isTerminal, Date().timeIntervalSince(lastDraw) >= 0.1 || done == total else { return }
        lastDraw = Date()
        drawn = true
        io.writeErr("\r\u{1B}[K" + Self.line(done: done, total: total, elapsed: Date().timeIntervalSince(started), label: label))
    }

    func finish() {
        if drawn { io.writeErr("\n") }
    }

    /// `12000/100000 enqueued, 88000 left, 45000/s, ~2s left`
    static func line(done: Int, total: Int, elapsed: TimeInterval, label: String) -> String {
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let left = max(0, total - done)
        let rateText = rate > 0 && rate < 10 ? String(format: "%.1f", rate) : String(Int(rate))
        var text = "\(done)/\(total) \(label), \(left) left, \(rateText)/s"
        if rate > 0 && left > 0 { text += ", ~\(Int((Double(left) / rate).rounded(.up)))s left" }
        return text
    }
}
