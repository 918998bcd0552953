import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    /// One schedule of a `schedule apply` file, checked.
    struct DeclaredSchedule {
        var schedule: SchedulesTable.Schedule
        /// Nil when the file leaves the paused state to the operator.
        var paused: Bool?
    }

    static let applyFields: Set<String> = ["name", "cron", "every", "timezone", "missed", "paused", "job"]

    /// Reads a JSON array of schedules or NDJSON; errors name the entry and the field.
    static func parseScheduleFile(_ data: Data) throws -> [DeclaredSchedule] {
        let text = String(decoding: data, as: UTF8.self)
        var entries: [(label: String, object: Any)] = []
        if text.drop(while: { $0.isWhitespace }).first == "[" {
            guard let array = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
                throw ControlError.badInput("error: FILE: is not a valid JSON array")
            }
            entries = array.enumerated().map { ("entry \($0.offset + 1)", $0.element) }
        } else {
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.allSatisfy(\.isWhitespace) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) else {
                    throw ControlError.badInput("error: FILE line \(index + 1): is not valid JSON")
                }
                entries.append(("line \(index + 1)", object))
            }
        }
        var seen = Set<String>()
        var result: [DeclaredSchedule] = []
        for (label, raw) in entries {
            func fail(_ field: String, _ message: String) -> ControlError {
                ControlError.badInput("error: FILE \(label): \(field): \(message); nothing was changed")
            }
            guard let object = raw as? [String: Any] else { throw fail("entry", "must be a JSON object") }
            if let unknown = object.keys.filter({ !applyFields.contains($0) }).sorted().first {
                throw fail(unknown, "is not a known field (expected one of: \(applyFields.sorted().joined(separator: ", ")))")
            }
            guard let name = object["name"] as? String, SchedulesTable.isValidName(name) else {
                throw fail("name", "must be 1 to 128 characters of letters, digits, _ . : -")
            }
            guard seen.insert(name).inserted else { throw fail("name", "'\(name)' is given twice") }
            var schedule = SchedulesTable.Schedule(name: name, template: "{}")
            do {
                switch (object["cron"], object["every"]) {
                case (let cron as String, nil):
                    _ = try CronExpression(parsing: cron, field: "cron")
                    schedule.cron = cron.trimmingCharacters(in: .whitespaces)
                case (nil, let every as String):
                    schedule.everySeconds = try ScheduleRule.interval(every, field: "every")
                default:
                    throw ValidationError(field: "cron", message: "give exactly one of cron and every, as strings")
                }
                if let zone = object["timezone"] {
                    guard let zone = zone as? String else { throw ValidationError(field: "timezone", message: "must be a string") }
                    _ = try ScheduleRule.timeZone(named: zone, field: "timezone")
                    schedule.timezone = zone
                }
                if let missed = object["missed"] {
                    guard let text = missed as? String, let policy = MissedRunPolicy(rawValue: text) else {
                        throw ValidationError(field: "missed", message: "must be one of \(MissedRunPolicy.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    schedule.missed = policy
                }
                guard let job = object["job"] as? [String: Any],
                      let jobData = try? JSONSerialization.data(withJSONObject: job, options: [.sortedKeys]) else {
                    throw ValidationError(field: "job", message: "is required: a JSON object with url (an HTTP job) or kind")
                }
                schedule.template = try ScheduleTemplate(json: String(decoding: jobData, as: UTF8.self)).json
            } catch let error as ValidationError {
                let field = ["cron", "every", "timezone", "missed", "job"].contains(error.field) ? error.field : "job.\(error.field)"
                throw fail(field, error.message)
            }
            var paused: Bool?
            if let value = object["paused"] {
                guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else {
                    throw fail("paused", "must be true or false")
                }
                paused = number.boolValue
            }
            schedule.paused = paused ?? false
            result.append(DeclaredSchedule(schedule: schedule, paused: paused))
        }
        return result
    }

    static func scheduleApply(_ command: ParsedCommand, io: ControlIO) throws {
        let source = command.positionals("file").first ?? "-"
        let data: Data
        if source == "-" {
            data = io.readStandardInput()
        } else {
            guard let contents = FileManager.default.contents(atPath: source) else {
                throw ControlError.badInput("error: FILE: cannot read '\(source)'")
            }
            data = contents
        }
        let declared = try parseScheduleFile(data)
        let dryRun = command.flag("dry-run")
        var changes: [(action: String, name: String)] = []
        try withDatabase(command, io: io) { connection in
            try connection.transaction { tx in
                // One apply at a time: two deploys applying different files must not interleave.
                try tx.schedulesLockApply()
                let existing = Dictionary(uniqueKeysWithValues: try tx.schedulesAll().map { ($0.name, $0) })
                for entry in declared {
                    let wanted = entry.schedule
                    guard let stored = existing[wanted.name] else {
                        changes.append(("add", wanted.name))
                        if !dryRun { try tx.scheduleAdd(wanted) }
                        continue
                    }
                    let ruleChanged = stored.cron != wanted.cron || stored.everySeconds != wanted.everySeconds
                    let zoneChanged = wanted.cron != nil && stored.timezone != wanted.timezone
                    let templateChanged = (try? ScheduleTemplate(json: stored.template).json) != wanted.template
                    let missedChanged = stored.missed != wanted.missed
                    let pausedChanged = entry.paused.map { $0 != stored.paused } ?? false
                    guard ruleChanged || zoneChanged || templateChanged || missedChanged || pausedChanged else {
                        changes.append(("keep", wanted.name))
                        continue
                    }
                    changes.append(("update", wanted.name))
                    if dryRun { continue }
                    if ruleChanged || zoneChanged || templateChanged || missedChanged {
                        _ = try tx.scheduleUpdate(
                            wanted.name, template: templateChanged ? wanted.template : nil,
                            cron: ruleChanged ? wanted.cron : nil, everySeconds: ruleChanged ? wanted.everySeconds : nil,
                            timezone: ruleChanged || zoneChanged ? wanted.timezone : nil,
                            missed: missedChanged ? wanted.missed : nil)
                    }
                    if pausedChanged, let paused = entry.paused { _ = try tx.schedulePause(wanted.name, paused: paused) }
                }
                let names = Set(declared.map(\.schedule.name))
                for name in existing.keys.sorted() where !names.contains(name) {
                    changes.append(("remove", name))
                    if !dryRun { _ = try tx.scheduleRemove(name) }
                }
            }
        }
        if command.flag("json") {
            try io.printJSON(["dry_run": dryRun ? "true" : "false"].merging(
                Dictionary(grouping: changes, by: \.action).mapValues { $0.map(\.name).joined(separator: ",") }) { a, _ in a })
            return
        }
        let counts = Dictionary(grouping: changes, by: \.action).mapValues(\.count)
        for change in changes where change.action != "keep" { io.print("\(change.action) \(change.name)") }
        io.print((dryRun ? "would " : "") + "add \(counts["add"] ?? 0), update \(counts["update"] ?? 0), remove \(counts["remove"] ?? 0), keep \(counts["keep"] ?? 0)"
                 + (dryRun ? " (dry run: nothing changed)" : ""))
    }
}
