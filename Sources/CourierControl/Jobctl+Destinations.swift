import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    static func destinations(_ command: ParsedCommand, io: ControlIO) throws {
        let rows = try withDatabase(command, io: io) { try $0.destinationsOverview() }
        if command.flag("json") {
            try io.printJSON(rows)
            return
        }
        io.print(rows.isEmpty ? "no destination policies, breakers or recent traffic" : overviewTable(rows))
    }

    static func destinationSet(_ command: ParsedCommand, io: ControlIO) throws {
        var changes = DestinationsTable.Policy(destination: try destinationArgument(command))
        if let name = command.value("signing-secret") {
            guard EnqueueRequest.isValidSecretName(name) else {
                throw ControlError.badInput("error: --signing-secret: \(EnqueueRequest.secretNameRule)")
            }
            changes.signingSecret = name
        }
        let traffic = try TrafficPolicyInput.read(command)
        changes.maxInFlight = traffic.maxInFlight
        changes.ratePerSecond = traffic.ratePerSecond
        changes.burst = traffic.burst
        changes.slowStartMilliseconds = traffic.slowStartMilliseconds
        changes.retryBudgetPercent = traffic.retryBudgetPercent
        let propagate: Bool? = command.flag("propagate-trace") ? true : command.flag("no-propagate-trace") ? false : nil
        let stored = try withDatabase(command, io: io) { try $0.destinationMerge(changes, propagateTrace: propagate) }
        if command.flag("json") {
            try io.printJSON(stored)
        } else {
            io.print(policyTable([stored]))
        }
    }

    static func destinationReset(_ command: ParsedCommand, io: ControlIO) throws {
        let destination = try destinationArgument(command)
        let removed = try withDatabase(command, io: io) { try $0.destinationRemove(destination: destination) }
        guard removed else {
            throw ControlError.notFound("error: destination '\(destination)' has no policy (see 'jobctl destinations')")
        }
        if command.flag("json") {
            try io.printJSON(["destination": destination, "policy": "cleared"])
        } else {
            io.print("\(destination): policy cleared; its jobs follow the defaults")
        }
    }

    static func destinationPause(_ command: ParsedCommand, io: ControlIO, paused: Bool) throws {
        let destination = try destinationArgument(command)
        let stored = try withDatabase(command, io: io) { try $0.destinationPause(destination: destination, paused: paused) }
        if command.flag("json") {
            try io.printJSON(stored)
        } else {
            io.print(paused ? "\(stored.destination): paused; its waiting jobs wait, running ones finish"
                            : "\(stored.destination): resumed")
        }
    }

    static func queuePause(_ command: ParsedCommand, io: ControlIO, paused: Bool) throws {
        guard let queue = command.positionals("queue").first, QueueSettingsTable.isValidQueueName(queue) else {
            throw ControlError.badInput("error: QUEUE: must be \(QueueName.rule)")
        }
        let before = try withDatabase(command, io: io) { try $0.queuePause(queue: queue, paused: paused) }
        if command.flag("json") {
            try io.printJSON(["queue": queue, "paused": paused ? "true" : "false", "was_paused": before ? "true" : "false"])
        } else {
            io.print(paused ? "\(queue): paused; no job of it starts, running ones finish" : "\(queue): resumed")
        }
    }

    /// DESTINATION as given; `courier.destination_set` and `destination_reset` normalise it.
    private static func destinationArgument(_ command: ParsedCommand) throws -> String {
        guard let destination = command.positionals("destination").first else {
            throw ControlError.badInput("error: DESTINATION: required (scheme://host:port or a URL)")
        }
        do throws(ValidationError) {
            return try Destination.validate(destination, field: "DESTINATION")
        } catch {
            throw ControlError.badInput("error: \(error)")
        }
    }

    private static func policyTable(_ rows: [DestinationsTable.Policy]) -> String {
        var table = TextTable(["DESTINATION", "MAX", "RATE", "BURST", "SLOW_START", "RETRY_BUDGET", "PAUSED", "SIGNING_SECRET",
                               "PROPAGATE_TRACE", "UPDATED"])
        for row in rows {
            table.add([row.destination] + limitCells(row)
                      + [row.signingSecret ?? "-", row.propagateTrace ? "yes" : "no", row.updatedAt.map(Timestamp.format) ?? "-"])
        }
        return table.render()
    }

    private static func overviewTable(_ rows: [DestinationsTable.Overview]) -> String {
        var table = TextTable(["DESTINATION", "MAX", "RATE", "BURST", "SLOW_START", "RETRY_BUDGET", "PAUSED", "IN_FLIGHT", "WAITING",
                               "RECENT/S", "BREAKER", "SIGNING_SECRET"])
        for row in rows {
            table.add([row.policy.destination] + limitCells(row.policy)
                      + [String(row.inFlight), String(row.waiting), String(format: "%.1f", row.recentPerSecond), row.breakerState,
                         row.policy.signingSecret ?? "-"])
        }
        return table.render()
    }

    private static func limitCells(_ p: DestinationsTable.Policy) -> [String] {
        [p.maxInFlight.map(String.init) ?? "-", p.ratePerSecond.map { TrafficPolicyInput.formatRate($0) } ?? "-",
         p.burst.map(String.init) ?? "-", p.slowStartMilliseconds.map { DurationParser.format(.milliseconds($0)) } ?? "-",
         p.retryBudgetPercent.map { TrafficPolicyInput.formatNumber($0) + "%" } ?? "-", p.paused ? "yes" : "no"]
    }
}

/// The traffic flags of `jobctl destination set`, read and checked: a bad value is a usage
/// error naming the flag (exit 2), before the database is asked. The ranges are the ones
/// `courier.destination_set` checks too.
struct TrafficPolicyInput: Equatable {
    var maxInFlight: Int?
    var ratePerSecond: Double?
    var burst: Int?
    var slowStartMilliseconds: Int64?
    var retryBudgetPercent: Double?

    static let maxInFlightRange = 1...100_000
    static let burstRange = 1...1_000_000
    static let maxRatePerSecond = 1_000_000.0

    static func read(_ command: ParsedCommand) throws -> TrafficPolicyInput {
        var input = TrafficPolicyInput()
        input.maxInFlight = try command.int("max-in-flight", range: maxInFlightRange)
        if let rate = try command.rate("rate") {
            guard rate.perSecond <= maxRatePerSecond else {
                throw ControlError.badInput("error: --rate: at most \(Int(maxRatePerSecond))/s, got '\(command.value("rate") ?? "")'")
            }
            input.ratePerSecond = rate.perSecond
        }
        input.burst = try command.int("burst", range: burstRange)
        input.slowStartMilliseconds = try command.duration("slow-start", minimum: .zero, maximum: .seconds(86_400))
            .map { Int64($0.milliseconds) }
        if let text = command.value("retry-budget") {
            let number = text.hasSuffix("%") ? String(text.dropLast()) : text
            guard let percent = Double(number), percent.isFinite, (0...100).contains(percent) else {
                throw ControlError.badInput("error: --retry-budget: expected a percentage from 0 to 100 (20 or 20%), got '\(text)'")
            }
            input.retryBudgetPercent = percent
        }
        return input
    }

    /// `50/s`, or `0.5/s` for fractions.
    static func formatRate(_ perSecond: Double) -> String { formatNumber(perSecond) + "/s" }

    static func formatNumber(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
