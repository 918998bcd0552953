import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    static func tenants(_ command: ParsedCommand, io: ControlIO) throws {
        let rows = try withDatabase(command, io: io) { try $0.tenantsOverview() }
        if command.flag("json") {
            try io.printJSON(rows)
            return
        }
        guard !rows.isEmpty else {
            io.print("no fairness keys: no job names one and none has settings")
            return
        }
        var table = TextTable(["KEY", "WEIGHT", "MAX", "RUNNING", "WAITING", "UPDATED"])
        for row in rows {
            table.add([row.tenant.fairnessKey, String(row.tenant.weight), row.tenant.maxInFlight.map(String.init) ?? "-",
                       String(row.running), row.waiting.capped ? "more than \(row.waiting.value)" : String(row.waiting.value), row.tenant.updatedAt.map(Timestamp.format) ?? "-"])
        }
        io.print(table.render())
    }

    static func tenantSet(_ command: ParsedCommand, io: ControlIO) throws {
        let key = try tenantKeyArgument(command)
        let weight = try command.int("weight")
        let weights = TenantsTable.weightRange, caps = TenantsTable.maxInFlightRange
        if let weight, !weights.contains(weight) {
            throw command.invalid("weight", "must be between \(weights.lowerBound) and \(weights.upperBound)")
        }
        let cap = try command.int("max-in-flight")
        if let cap, !caps.contains(cap) { throw command.invalid("max-in-flight", "must be between \(caps.lowerBound) and \(caps.upperBound)") }
        let clear: [TenantsTable.Field] = command.flag("no-max-in-flight") ? [.maxInFlight] : []
        let stored = try withDatabase(command, io: io) { try $0.tenantSet(key, weight: weight, maxInFlight: cap, clear: clear) }
        if command.flag("json") {
            try io.printJSON(stored)
        } else {
            io.print("\(stored.fairnessKey): weight \(stored.weight), " + (stored.maxInFlight.map { "at most \($0) in flight" } ?? "no cap"))
        }
    }

    static func tenantReset(_ command: ParsedCommand, io: ControlIO) throws {
        let key = try tenantKeyArgument(command)
        let removed = try withDatabase(command, io: io) { try $0.tenantReset(key) }
        guard removed else { throw ControlError.notFound("error: fairness key '\(key)' has no settings (see 'jobctl tenants')") }
        if command.flag("json") {
            try io.printJSON(["fairness_key": key, "settings": "cleared"])
        } else {
            io.print("\(key): settings cleared; weight 1, no cap")
        }
    }

    private static func tenantKeyArgument(_ command: ParsedCommand) throws -> String {
        guard let key = command.positionals("key").first else { throw ControlError.badInput("error: KEY: required") }
        guard FairnessKey.isValid(key) else { throw ControlError.badInput("error: KEY: \(FairnessKey.rule)") }
        return key
    }
}
