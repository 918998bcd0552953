@testable import CourierControl
@testable import CourierStore
import CourierTestSupport
import Foundation
import Testing

/// Issue 17: `jobctl stats --watch` draws on the alternate screen, fits the terminal with
/// the most important lines first, and writes plain frames (no escape codes) to a pipe.
@Suite("jobctl stats --watch")
struct StatsWatchTests {
    static func view(queues: Int) -> Jobctl.StatsView {
        Jobctl.StatsView(
            queues: (0..<queues).map { StatsQueries.QueueDepth(queue: "queue-\($0)", state: "available", count: 10 + $0, oldestDueSeconds: 1.5) },
            throughputPerMinute: 42, lastHour: [], lastDay: [], destinationsLastHour: [],
            deadLetters: ["exhausted": 3], breakers: ["open": 1, "closed": 4], workers: 2,
            schedules: ["total": 0])
    }

    @Test func aFrameFitsAnEightyByTwentyTerminalWithTheHeadlineFirst() {
        let lines = StatsScreen.frame(Self.view(queues: 40), title: "courier stats", size: TerminalSize(rows: 20, columns: 80))
        #expect(lines.count == 19, "the cursor's line stays free: \(lines.count)")
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(lines[0] == "courier stats")
        #expect(lines[1].hasPrefix("waiting 1180 · running 0 · succeeded/min 42 · workers 2"), "\(lines[1])")
        #expect(lines[1].count <= 80)
        #expect(lines[3].hasPrefix("QUEUE"), "then the queue table: \(lines[3])")
        #expect(lines.last?.hasPrefix("… ") == true, "says that rows were cut: \(lines.last ?? "")")
        #expect(lines.last?.contains("more rows") == true)
    }

    @Test func aSmallQueueTableLeavesRoomForTheDetails() {
        let lines = StatsScreen.frame(Self.view(queues: 2), title: "t", size: TerminalSize(rows: 40, columns: 80))
        #expect(lines.contains { $0.hasPrefix("queue-1") })
        #expect(lines.contains { $0.hasPrefix("breakers:") })
        #expect(lines.count <= 39)
        let narrow = StatsScreen.frame(Self.view(queues: 2), title: String(repeating: "x", count: 100), size: TerminalSize(rows: 5, columns: 30))
        #expect(narrow.count == 4)
        #expect(narrow.allSatisfy { $0.count <= 30 })
        #expect(narrow[0].hasSuffix("…"))
    }

    @Test func withoutATerminalEveryLineIsKept() {
        let lines = StatsScreen.frame(Self.view(queues: 40), title: "t", size: nil)
        #expect(lines.filter { $0.hasPrefix("queue-") }.count == 40)
    }

    func watch(_ fixture: ControlFixture, terminal: Bool) -> JobctlOutcome {
        let out = OutputBuffer()
        let err = OutputBuffer()
        var io = ControlIO(environment: [:], writeOut: { out.append($0) }, writeErr: { err.append($0) },
                           readStandardInput: { Data() }, isTerminal: terminal)
        io.outputIsTerminal = terminal
        io.terminalSize = { TerminalSize(rows: 20, columns: 80) }
        let status = Jobctl.run(["--database-url", fixture.database.url, "stats", "--watch", "--frames", "2",
                                 "--interval", "200ms"], io: io)
        return JobctlOutcome(status: status, out: out.value, err: err.value)
    }

    @Test func aPipeGetsPlainFrames() throws {
        try ControlFixture.with { fixture throws in
            for n in 0..<3 { try fixture.enqueue("http://a.example.com/\(n)") { $0.queue = "q\(n)" } }
            let result = watch(fixture, terminal: false)
            #expect(result.status == 0, "\(result)")
            #expect(!result.out.contains("\u{1B}"), "no escape codes into a pipe")
            #expect(result.out.components(separatedBy: "courier stats at ").count - 1 == 2, "two frames: \(result.out)")
            #expect(result.out.contains("q2"))
        }
    }

    @Test func aTerminalGetsTheAlternateScreenAndFittedFrames() throws {
        try ControlFixture.with { fixture throws in
            for n in 0..<30 { try fixture.enqueue("http://a.example.com/\(n)") { $0.queue = "queue-\(n)" } }
            let result = watch(fixture, terminal: true)
            #expect(result.status == 0, "\(result)")
            #expect(result.out.hasPrefix(StatsScreen.enter), "enters the alternate screen first")
            #expect(result.out.hasSuffix(StatsScreen.leave), "and leaves it at the end")
            let frames = result.out.components(separatedBy: StatsScreen.home).dropFirst()
            #expect(frames.count == 2)
            for frame in frames {
                let lines = frame.components(separatedBy: "\n")
                #expect(lines.count <= 19, "fits 20 rows: \(lines.count)")
                for line in lines {
                    let visible = line.replacingOccurrences(of: StatsScreen.eraseLine, with: "")
                        .replacingOccurrences(of: StatsScreen.eraseBelow, with: "")
                        .replacingOccurrences(of: StatsScreen.leave, with: "")
                    #expect(visible.count <= 80, "\(visible)")
                }
            }
        }
    }
}
