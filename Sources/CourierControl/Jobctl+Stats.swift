import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    struct StatsView: Encodable {
        var queues: [StatsQueries.QueueDepth]
        var throughputPerMinute: Int
        var lastHour: [AttemptStatsTable.Summary]
        var lastDay: [AttemptStatsTable.Summary]
        var destinationsLastHour: [AttemptStatsTable.Summary]
        var deadLetters: [String: Int]
        var breakers: [String: Int]
        var workers: Int
        /// Schedules: `total`, `paused`, `failing` (cannot run; see `jobctl schedules`).
        var schedules: [String: Int]
        /// Paused queues and destinations (`jobctl queue|destination pause`): `queues`, `destinations`.
        var paused: [String: [String]] = [:]

        enum CodingKeys: String, CodingKey {
            case queues, throughputPerMinute = "succeeded_last_minute", lastHour = "queues_last_hour"
            case lastDay = "queues_last_day", destinationsLastHour = "destinations_last_hour"
            case deadLetters = "dead_letters", breakers, workers, schedules, paused
        }
    }

    static func statsView(on connection: ControlStore) throws -> StatsView {
        StatsView(
            queues: try connection.statsQueueDepths(),
            throughputPerMinute: try connection.statsSucceededLastMinute(),
            lastHour: try connection.attemptStatsSummaries(lastSeconds: 3600, by: .queue),
            lastDay: try connection.attemptStatsSummaries(lastSeconds: 86_400, by: .queue),
            destinationsLastHour: try connection.attemptStatsSummaries(lastSeconds: 3600, by: .destination),
            deadLetters: try connection.statsDeadLetterCounts(),
            breakers: try connection.statsBreakerStates(),
            workers: try connection.workersLive().count,
            schedules: try connection.schedulesCounts().dictionary,
            paused: ["queues": try connection.queuesPaused(),
                     "destinations": try connection.destinationsPaused()])
    }

    static func stats(_ command: ParsedCommand, io: ControlIO) throws {
        let connection = try connect(command, io: io)
        defer { connection.close() }
        let interval = try command.duration("interval", minimum: .milliseconds(200)) ?? .seconds(2)
        if command.flag("watch") {
            try watchStats(connection: connection, interval: interval, frames: try command.int("frames", range: 1...1_000_000),
                           json: command.flag("json"), io: io)
            return
        }
        let view = try statsView(on: connection)
        if command.flag("json") {
            try io.printJSON(view)
        } else {
            io.print(render(view))
        }
    }

    static func render(_ view: StatsView) -> String {
        (depthLines(view) + [""] + detailLines(view)).joined(separator: "\n")
    }

    /// The queue-depth table (or a line saying there is nothing), one string per line.
    static func depthLines(_ view: StatsView) -> [String] {
        var depth = TextTable(["QUEUE", "STATE", "JOBS", "OLDEST_DUE"])
        for d in view.queues {
            depth.add([d.queue, d.state, String(d.count), d.oldestDueSeconds.map { String(format: "%.1fs", $0) } ?? "-"])
        }
        return view.queues.isEmpty ? ["no waiting or running jobs"] : depth.render().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Everything after the depth table.
    static func detailLines(_ view: StatsView) -> [String] {
        var lines: [String] = []
        lines.append("succeeded in the last minute: \(view.throughputPerMinute)")
        for (title, summaries) in [("last hour", view.lastHour), ("last day", view.lastDay)] {
            lines.append("")
            lines.append("attempts per queue, \(title):")
            if summaries.isEmpty { lines.append("  none") }
            for s in summaries {
                let classes = s.attemptsByClass.keys.sorted().map { "\($0)=\(s.attemptsByClass[$0]!)" }.joined(separator: " ")
                lines.append("  \(s.group): \(classes)")
                var retry = "    retries=\(s.retries) succeeded=\(s.succeeded) succeeded_after_retry=\(s.succeededAfterRetry)"
                if let mean = s.retryDelayMeanSeconds { retry += String(format: " mean_retry_delay=%.1fs", mean) }
                lines.append(retry)
                if s.retries > 0 {
                    let order = AttemptStatsTable.delayBounds.map { "le_\(Int($0))s" } + ["le_inf"]
                    lines.append("    retry delays (cumulative): " + order.map { "\($0)=\(s.retryDelayHistogram[$0] ?? 0)" }.joined(separator: " "))
                }
            }
        }
        let failing = view.destinationsLastHour.filter { $0.attemptsByClass.keys.contains { $0 != "success" } }
        if !failing.isEmpty {
            lines.append("")
            lines.append("destinations with failures, last hour:")
            for s in failing.prefix(10) {
                let classes = s.attemptsByClass.keys.sorted().map { "\($0)=\(s.attemptsByClass[$0]!)" }.joined(separator: " ")
                lines.append("  \(s.group): \(classes)")
            }
        }
        lines.append("")
        let dead = view.deadLetters.keys.sorted().map { "\($0)=\(view.deadLetters[$0]!)" }.joined(separator: " ")
        lines.append("dead letters (not replayed): \(dead.isEmpty ? "0" : dead)")
        let breakers = view.breakers.keys.sorted().map { "\($0)=\(view.breakers[$0]!)" }.joined(separator: " ")
        lines.append("breakers: \(breakers.isEmpty ? "none" : breakers)")
        lines.append("live workers: \(view.workers)")
        let pausedQueues = view.paused["queues"] ?? [], pausedDestinations = view.paused["destinations"] ?? []
        lines.append("paused: queues \(pausedQueues.isEmpty ? "none" : pausedQueues.joined(separator: ",")); "
                     + "destinations \(pausedDestinations.isEmpty ? "none" : pausedDestinations.joined(separator: ","))")
        let schedules = view.schedules
        lines.append("schedules: \(schedules["total"] ?? 0) (paused \(schedules["paused"] ?? 0), failing \(schedules["failing"] ?? 0))")
        return lines
    }
}
