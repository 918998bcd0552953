import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    static func queues(_ command: ParsedCommand, io: ControlIO) throws {
        let rows = try withDatabase(command, io: io) { try $0.queueSettingsAll() }
        if command.flag("json") {
            try io.printJSON(rows.map(QueueSettingsView.init))
            return
        }
        io.print(rows.isEmpty ? "no queue settings: every queue follows the workers' flags" : settingsTable(rows))
    }

    static func queueSet(_ command: ParsedCommand, io: ControlIO) throws {
        var changes = QueueSettingsTable.Settings(queue: try queueArgument(command))
        changes.backoff = command.value("backoff")
        changes.jitter = command.value("jitter")
        changes.backoffBaseMilliseconds = try milliseconds(command, "backoff-base", minimum: .milliseconds(1), maximum: .seconds(86_400))
        changes.backoffCapMilliseconds = try milliseconds(command, "backoff-cap", minimum: .milliseconds(1), maximum: .seconds(604_800))
        changes.retryAfterCapMilliseconds = try milliseconds(command, "retry-after-cap", minimum: .zero, maximum: .seconds(604_800))
        changes.backoffMultiplier = try command.double("backoff-multiplier", range: 1...100)
        changes.priorityHeadStartMilliseconds = try milliseconds(command, "priority-head-start", minimum: .milliseconds(1),
                                                                 maximum: .seconds(86_400))
        let clearHeadStart = command.flag("no-priority-head-start")
        let stored = try withDatabase(command, io: io) { connection in
            try connection.queueSettingsMerge(changes, clearHeadStart: clearHeadStart) { merged in
                if let base = merged.backoffBaseMilliseconds, let cap = merged.backoffCapMilliseconds, base > cap {
                    // Rolled back: workers would ignore the row and keep their own flags.
                    let flag = changes.backoffBaseMilliseconds != nil ? "--backoff-base" : "--backoff-cap"
                    throw ControlError.badInput("error: \(flag): the queue's backoff base (\(format(base))) would be longer than its cap (\(format(cap))); nothing was changed")
                }
            }
        }
        if command.flag("json") {
            try io.printJSON(QueueSettingsView(stored))
        } else {
            io.print(settingsTable([stored]))
        }
    }

    static func queueReset(_ command: ParsedCommand, io: ControlIO) throws {
        let queue = try queueArgument(command)
        let removed = try withDatabase(command, io: io) { try $0.queueSettingsRemove(queue: queue) }
        guard removed else { throw ControlError.notFound("error: queue '\(queue)' has no settings (see 'jobctl queues')") }
        if command.flag("json") {
            try io.printJSON(["queue": queue, "settings": "cleared"])
        } else {
            io.print("\(queue): settings cleared; its jobs follow each worker's flags")
        }
    }

    private static func queueArgument(_ command: ParsedCommand) throws -> String {
        guard let queue = command.positionals("queue").first, QueueSettingsTable.isValidQueueName(queue) else {
            throw ControlError.badInput("error: QUEUE: must be \(QueueName.rule)")
        }
        return queue
    }

    private static func milliseconds(_ command: ParsedCommand, _ name: String, minimum: Duration, maximum: Duration) throws -> Int64? {
        try command.duration(name, minimum: minimum, maximum: maximum).map { Int64($0.milliseconds) }
    }

    private static func format(_ milliseconds: Int64) -> String {
        DurationParser.format(.milliseconds(milliseconds))
    }

    private static func settingsTable(_ rows: [QueueSettingsTable.Settings]) -> String {
        var table = TextTable(["QUEUE", "BACKOFF", "BASE", "CAP", "MULTIPLIER", "JITTER", "RETRY_AFTER_CAP", "HEAD_START", "PAUSED"])
        for row in rows {
            table.add([row.queue, row.backoff ?? "-", row.backoffBaseMilliseconds.map(format) ?? "-",
                       row.backoffCapMilliseconds.map(format) ?? "-", row.backoffMultiplier.map { String($0) } ?? "-",
                       row.jitter ?? "-", row.retryAfterCapMilliseconds.map(format) ?? "-",
                       row.priorityHeadStartMilliseconds.map(format) ?? "-", row.paused ? "yes" : "no"])
        }
        return table.render()
    }
}

/// `jobctl queues --json`: one object per queue; null where the workers' flag applies.
struct QueueSettingsView: Encodable {
    var settings: QueueSettingsTable.Settings
    init(_ settings: QueueSettingsTable.Settings) { self.settings = settings }

    enum CodingKeys: String, CodingKey {
        case queue, backoff, jitter
        case backoffBaseMilliseconds = "backoff_base_ms", backoffCapMilliseconds = "backoff_cap_ms"
        case backoffMultiplier = "backoff_multiplier", retryAfterCapMilliseconds = "retry_after_cap_ms"
        case priorityHeadStartMilliseconds = "priority_head_start_ms", paused
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(settings.queue, forKey: .queue)
        try container.encode(settings.backoff, forKey: .backoff)
        try container.encode(settings.backoffBaseMilliseconds, forKey: .backoffBaseMilliseconds)
        try container.encode(settings.backoffCapMilliseconds, forKey: .backoffCapMilliseconds)
        try container.encode(settings.backoffMultiplier, forKey: .backoffMultiplier)
        try container.encode(settings.jitter, forKey: .jitter)
        try container.encode(settings.retryAfterCapMilliseconds, forKey: .retryAfterCapMilliseconds)
        try container.encode(settings.priorityHeadStartMilliseconds, forKey: .priorityHeadStartMilliseconds)
        try container.encode(settings.paused, forKey: .paused)
    }
}
