import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    // MARK: add / update

    static func scheduleAdd(_ command: ParsedCommand, io: ControlIO) throws {
        let name = try scheduleNameArgument(command)
        var schedule = SchedulesTable.Schedule(name: name, template: "{}")
        try applyRuleFlags(to: &schedule, from: command)
        let job: ScheduleTemplate.Job
        if command.value("kind") != nil {
            var handler = ScheduleTemplate.HandlerJob(kind: "")
            try applyHandlerFlags(to: &handler, from: command)
            job = .handler(handler)
        } else {
            guard command.value("url") != nil else { throw ControlError.badInput("error: --url: required (or --kind for a handler job)") }
            if command.value("args") != nil { throw ControlError.badInput("error: --args: only with --kind") }
            var request = EnqueueRequest(url: "")
            try applyJobFlags(to: &request, from: command, io: io, now: nil)
            job = .http(request)
        }
        let template = try checkedTemplate(ScheduleTemplate(job: job, withinMilliseconds: try withinMilliseconds(command)))
        schedule.template = template.json
        schedule.paused = command.flag("paused")
        try withDatabase(command, io: io) { connection in
            if try connection.scheduleFind(name) != nil {
                throw ControlError.badInput("error: NAME: schedule '\(name)' exists; change it with 'jobctl schedule update'")
            }
            try connection.scheduleAdd(schedule)
        }
        try printSchedule(name, command: command, io: io, verb: "added")
    }

    static func scheduleUpdate(_ command: ParsedCommand, io: ControlIO) throws {
        let name = try scheduleNameArgument(command)
        try withDatabase(command, io: io) { connection in
            try connection.transaction { tx in
                guard var stored = try tx.scheduleFind(name) else {
                    throw ControlError.notFound("error: no schedule named '\(name)' (see 'jobctl schedules')")
                }
                let before = stored
                try applyRuleFlags(to: &stored, from: command)
                var template = try ScheduleTemplate(json: stored.template)
                if let within = try withinMilliseconds(command) { template.withinMilliseconds = within }
                switch template.job {
                case .http(var request):
                    if command.value("kind") != nil || command.value("args") != nil {
                        throw ControlError.badInput("error: --kind: the schedule's job is an HTTP job; remove and add the schedule to change that")
                    }
                    try applyJobFlags(to: &request, from: command, io: io, now: nil)
                    template.job = .http(request)
                case .handler(var handler):
                    for flag in ["url", "method", "header", "data", "expect-content-type"] where command.isSpecified(flag) {
                        throw ControlError.badInput("error: --\(flag): the schedule's job is a handler job (kind \(handler.kind))")
                    }
                    try applyHandlerFlags(to: &handler, from: command)
                    template.job = .handler(handler)
                }
                let json = try checkedTemplate(template).json
                let ruleChanged = stored.cron != before.cron || stored.everySeconds != before.everySeconds
                _ = try tx.scheduleUpdate(
                    name, template: json,
                    cron: ruleChanged ? stored.cron : nil, everySeconds: ruleChanged ? stored.everySeconds : nil,
                    timezone: command.isSpecified("timezone") ? stored.timezone : nil,
                    missed: command.isSpecified("missed") ? stored.missed : nil)
            }
        }
        try printSchedule(name, command: command, io: io, verb: "updated")
    }

    /// `--cron`, `--every`, `--timezone`, `--missed`, checked by the one cron grammar.
    private static func applyRuleFlags(to schedule: inout SchedulesTable.Schedule, from command: ParsedCommand) throws {
        do {
            if let cron = command.value("cron") {
                _ = try CronExpression(parsing: cron, field: "--cron")
                schedule.cron = cron.trimmingCharacters(in: .whitespaces)
                schedule.everySeconds = nil
            }
            if let every = command.value("every") {
                schedule.everySeconds = try ScheduleRule.interval(every, field: "--every")
                schedule.cron = nil
            }
            if let zone = command.value("timezone") {
                _ = try ScheduleRule.timeZone(named: zone, field: "--timezone")
                schedule.timezone = zone
            }
        } catch {
            throw ControlError.badInput("error: \(error.description)")
        }
        if let missed = try command.enumValue("missed", as: MissedRunPolicy.self) { schedule.missed = missed }
        if command.isSpecified("timezone"), schedule.cron == nil {
            throw ControlError.badInput("error: --timezone: only applies to --cron schedules")
        }
    }

    private static func applyHandlerFlags(to handler: inout ScheduleTemplate.HandlerJob, from command: ParsedCommand) throws {
        if let kind = command.value("kind") { handler.kind = kind }
        if let args = command.value("args") { handler.args = args }
        if let queue = command.value("queue") { handler.queue = queue }
        if let priority = try command.int("priority") { handler.priority = priority }
        if let attempts = try command.int("max-attempts") { handler.maxAttempts = attempts }
        if let key = command.value("unique-key") { handler.uniqueKey = key }
        if let destination = command.value("destination") { handler.destination = destination }
        if let ms = try timeoutMilliseconds(command) { handler.timeoutMilliseconds = ms }
        if let key = command.value("fairness-key") { handler.fairnessKey = key }
    }

    private static func withinMilliseconds(_ command: ParsedCommand) throws -> Int64? {
        try command.duration("within", minimum: .seconds(1)).map { Int64($0.milliseconds) }
    }

    /// Runs the template through the parser the workers use; errors name the jobctl flag.
    private static func checkedTemplate(_ template: ScheduleTemplate) throws -> ScheduleTemplate {
        do {
            return try ScheduleTemplate(json: template.json)
        } catch {
            let flag: String = switch error.field {
            case "kind": "--kind"
            case "args": "--args"
            case "within_ms": "--within"
            default: JobctlFlags.flag(forField: error.field)
            }
            throw ControlError.badInput("error: \(flag): \(error.message)")
        }
    }

    private static func scheduleNameArgument(_ command: ParsedCommand) throws -> String {
        guard let name = command.positionals("name").first, SchedulesTable.isValidName(name) else {
            throw ControlError.badInput("error: NAME: must be 1 to 128 characters of letters, digits, _ . : -")
        }
        return name
    }

    // MARK: list / show

    static func schedulesList(_ command: ParsedCommand, io: ControlIO) throws {
        let rows = try withDatabase(command, io: io) { try $0.schedulesAll() }
        if command.flag("json") {
            try io.printJSON(rows.map { ScheduleView($0, now: Date()) })
            return
        }
        guard !rows.isEmpty else {
            io.print("no schedules (add one with 'jobctl schedule add')")
            return
        }
        var table = TextTable(["NAME", "RULE", "TIMEZONE", "MISSED", "STATE", "NEXT_RUN", "JOB"])
        for row in rows {
            let view = ScheduleView(row, now: Date())
            table.add([row.name, view.rule, row.cron != nil ? row.timezone : "-", row.missed.rawValue, view.state,
                       view.nextRuns.first.map(Timestamp.format) ?? "-", view.jobSummary])
        }
        io.print(table.render())
    }

    static func scheduleShow(_ command: ParsedCommand, io: ControlIO) throws {
        let name = try scheduleNameArgument(command)
        try printSchedule(name, command: command, io: io, verb: nil)
    }

    private static func printSchedule(_ name: String, command: ParsedCommand, io: ControlIO, verb: String?) throws {
        let nextCount = command.arguments.contains { $0.long == "next" } ? (try command.int("next", range: 0...100) ?? 5) : 5
        let runCount = command.arguments.contains { $0.long == "runs" } ? (try command.int("runs", range: 0...100) ?? 10) : 0
        let (found, runs) = try withDatabase(command, io: io) { connection in
            (try connection.scheduleFind(name), try connection.scheduleRuns(of: name, limit: runCount))
        }
        guard let schedule = found else { throw ControlError.notFound("error: no schedule named '\(name)' (see 'jobctl schedules')") }
        var view = ScheduleView(schedule, now: Date(), next: nextCount)
        view.runs = runs.map(RunView.init)
        if command.flag("json") {
            try io.printJSON(view)
            return
        }
        var lines: [String] = []
        if let verb { lines.append("\(verb) schedule \(name)") }
        lines += [
            "name:       \(schedule.name)",
            "rule:       \(view.rule)" + (schedule.cron != nil ? " (\(schedule.timezone))" : ""),
            "missed:     \(schedule.missed.rawValue)",
            "state:      \(view.state)" + (schedule.lastError.map { ": \($0)" } ?? ""),
            "job:        \(view.jobSummary)",
            "template:   \(ScheduleTemplate.displayJSON(schedule.template))",
            "next runs:  " + (view.nextRuns.isEmpty ? "-" : view.nextRuns.map(Timestamp.format).joined(separator: "\n            ")),
        ]
        if runCount > 0 {
            if runs.isEmpty {
                lines.append("last runs:  none yet")
            } else {
                var table = TextTable(["SLOT", "JOB", "ENQUEUED_AT", "OUTCOME"])
                for run in runs {
                    table.add([Timestamp.format(run.slot), String(run.jobID), Timestamp.format(run.enqueuedAt), run.outcome])
                }
                lines.append("last runs:")
                lines.append(table.render())
            }
        }
        io.print(lines.joined(separator: "\n"))
    }

    // MARK: pause / resume / remove

    static func schedulePauseResumeRemove(_ command: ParsedCommand, io: ControlIO) throws {
        let name = try scheduleNameArgument(command)
        let action = command.path[1]
        let found = try withDatabase(command, io: io) { connection -> Bool in
            switch action {
            case "pause": try connection.schedulePause(name, paused: true)
            case "resume": try connection.schedulePause(name, paused: false)
            default: try connection.scheduleRemove(name)
            }
        }
        guard found else { throw ControlError.notFound("error: no schedule named '\(name)' (see 'jobctl schedules')") }
        let done = ["pause": "paused", "resume": "resumed", "remove": "removed"][action] ?? action
        if command.flag("json") {
            try io.printJSON(["schedule": name, "result": done])
        } else {
            io.print("\(name): \(done)")
        }
    }
}

/// A schedule as `jobctl schedules --json` and `schedule show --json` print it: the
/// template and the job's URL redacted as jobs are (``ScheduleTemplate/displayJSON(_:)``).
struct ScheduleView: Encodable {
    var name: String
    var cron: String?
    var everySeconds: Int64?
    var timezone: String
    var missed: String
    var paused: Bool
    var lastError: String?
    var template: JSONValue
    var nextRuns: [Date]
    var runs: [RunView]?
    var rule: String
    var state: String
    var jobSummary: String

    enum CodingKeys: String, CodingKey {
        case name, cron, everySeconds = "every_seconds", timezone, missed, paused, lastError = "last_error", template
        case nextRuns = "next_runs", runs
    }

    init(_ s: SchedulesTable.Schedule, now: Date, next: Int = 1) {
        name = s.name
        cron = s.cron
        everySeconds = s.everySeconds
        timezone = s.timezone
        missed = s.missed.rawValue
        paused = s.paused
        lastError = s.lastError
        template = JSONValue(text: ScheduleTemplate.displayJSON(s.template))
        rule = s.cron ?? s.everySeconds.map { "every " + DurationParser.format(.seconds($0)) } ?? "-"
        state = s.lastError != nil ? "failing" : s.paused ? "paused" : "active"
        let parsedTemplate = try? ScheduleTemplate(json: s.template)
        switch parsedTemplate?.job {
        case .http(let r)?: jobSummary = "\(r.method) \(Redaction.redactURL(r.url)) (queue \(r.queue))"
        case .handler(let h)?: jobSummary = "kind \(h.kind) (queue \(h.queue))"
        case nil: jobSummary = "-"
        }
        // The next runs as the workers will compute them (from the stored next run, else from now).
        var runs: [Date] = []
        if !s.paused, s.lastError == nil, let rule = try? s.rule() {
            var cursor = s.nextRun.map { $0.addingTimeInterval(-0.000_5) } ?? now
            if let stored = s.nextRun, stored < now { cursor = stored.addingTimeInterval(-0.000_5) }
            while runs.count < next, let slot = rule.next(after: cursor) {
                runs.append(slot)
                cursor = slot
            }
        }
        nextRuns = runs
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(cron, forKey: .cron)
        try c.encode(everySeconds, forKey: .everySeconds)
        try c.encode(timezone, forKey: .timezone)
        try c.encode(missed, forKey: .missed)
        try c.encode(paused, forKey: .paused)
        try c.encode(lastError, forKey: .lastError)
        try c.encode(template, forKey: .template)
        try c.encode(nextRuns, forKey: .nextRuns)
        try c.encodeIfPresent(runs, forKey: .runs)
    }
}

struct RunView: Encodable {
    var slot: Date
    var jobID: Int64
    var enqueuedAt: Date
    var outcome: String
    enum CodingKeys: String, CodingKey { case slot, jobID = "job_id", enqueuedAt = "enqueued_at", outcome }
    init(_ run: SchedulesTable.Run) {
        slot = run.slot
        jobID = run.jobID
        enqueuedAt = run.enqueuedAt
        outcome = run.outcome
    }
}

/// Arbitrary JSON (a stored template), re-encoded as itself.
struct JSONValue: Encodable {
    let value: Any?
    init(text: String) { value = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) }
    init(any: Any?) { value = any }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch value {
        case let dictionary as [String: Any]:
            try c.encode(dictionary.mapValues { JSONValue(any: $0) })
        case let array as [Any]:
            try c.encode(array.map { JSONValue(any: $0) })
        case let string as String:
            try c.encode(string)
        case let number as NSNumber:
            if String(cString: number.objCType) == "c" { try c.encode(number.boolValue) }
            else if let whole = Int64(exactly: number.doubleValue) { try c.encode(whole) }
            else { try c.encode(number.doubleValue) }
        default:
            try c.encodeNil()
        }
    }
}
