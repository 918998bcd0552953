import CourierCLI
import CourierStore
import Foundation
import Postgres

extension Jobctl {
    struct StatsView: Encodable {
        var queues: [StatsQueries.QueueDepth]
        var deadLetters: [String: Int]
        var workers: Int

        enum CodingKeys: String, CodingKey {
            case queues, deadLetters = "dead_letters", workers
        }
    }

    static func stats(_ command: ParsedCommand, io: ControlIO) throws {
        let connection = try connect(command, io: io)
        defer { connection.close() }
        let interval = try command.duration("interval") ?? .seconds(2)
        repeat {
            let view = StatsView(
                queues: try StatsQueries.queueDepths(on: connection),
                deadLetters: try StatsQueries.deadLetterCounts(on: connection),
                workers: try WorkersTable.live(on: connection).count)
            if command.flag("json") {
                try io.printJSON(view)
            } else {
                if command.flag("watch") { io.writeOut("\u{1B}[H\u{1B}[2J") }
                io.print(render(view))
            }
            if command.flag("watch") { Thread.sleep(forTimeInterval: interval.seconds) }
        } while command.flag("watch")
    }

    static func render(_ view: StatsView) -> String {
        var table = TextTable(["QUEUE", "STATE", "JOBS", "OLDEST_DUE"])
        for depth in view.queues {
            table.add([depth.queue, depth.state, String(depth.count), depth.oldestDueSeconds.map { String(format: "%.1fs", $0) } ?? "-"])
        }
        var lines = [table.render()]
        let dead = view.deadLetters.keys.sorted().map { "\($0)=\(view.deadLetters[$0]!)" }.joined(separator: " ")
        lines.append("dead letters (not replayed): \(dead.isEmpty ? "0" : dead)")
        lines.append("live workers: \(view.workers)")
        return lines.joined(separator: "\n")
    }
}
