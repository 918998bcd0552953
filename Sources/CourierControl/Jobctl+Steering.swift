import CourierCLI
import CourierCore
import CourierStore
import Foundation

/// `jobctl list`, `retry`, `update` and `cancel`: finding jobs wherever they are and steering
/// the waiting ones.
extension Jobctl {
    /// The search `list` and `cancel` share; bad values name the flag.
    static func jobSearch(_ command: ParsedCommand, now: Date = Date()) throws -> JobsTable.Search {
        func list(_ name: String) -> [String]? {
            let values = command.values(name)
            return values.isEmpty ? nil : values
        }
        var search = JobsTable.Search()
        let isList = command.path == ["list"]
        let states = isList ? command.values("state") : []
        if !states.isEmpty {
            search.states = states.contains("all") ? Set(JobsTable.ListedState.allCases)
                : Set(states.compactMap(JobsTable.ListedState.init(rawValue:)))
        }
        search.queues = list("queue")
        search.destinations = list("destination").map(destinationCandidates)
        search.kinds = list("kind")
        search.urlPrefix = command.value("url-prefix")
        search.fairnessKeys = list("fairness-key")
        search.createdSince = try command.timestamp("since", now: now)
        search.createdUntil = try command.timestamp("until", now: now)
        if let since = search.createdSince, let until = search.createdUntil, since >= until {
            throw command.invalid("until", "must be later than --since")
        }
        if isList, let after = command.value("after") {
            search.afterID = try jobID(after, flag: "--after", command: command)
        }
        return search
    }

    /// Every destination the operator's filter values may mean (see `Destination.filterCandidates`).
    static func destinationCandidates(_ values: [String]) -> [String] {
        var all: [String] = []
        for value in values {
            for candidate in Destination.filterCandidates(value) where !all.contains(candidate) { all.append(candidate) }
        }
        return all
    }

    /// When a filter matched nothing, names each `--destination` value that nothing uses:
    /// the usual cause of an empty answer is a destination written differently.
    static func noteUnusedDestinations(_ values: [String], on db: ControlStore, io: ControlIO) throws {
        guard !values.isEmpty else { return }
        let used = Set(try db.destinationsInUse(destinationCandidates(values)))
        for value in values where !Destination.filterCandidates(value).contains(where: used.contains) {
            let tried = Destination.filterCandidates(value)
            io.printError("note: no job, dead letter or breaker uses destination \(Quoting.quote(value))"
                          + (tried.count > 1 ? " (looked for \(tried.joined(separator: ", ")))" : "")
                          + "; destinations look like scheme://host:port, see 'jobctl breakers' or 'jobctl list --state all'\n")
        }
    }

    /// "1,234": digits grouped by thousands, whatever the locale.
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return (number < 0 ? "-" : "") + result
    }

    /// "50 of 2,146 shown" or "50 of more than 10,000 shown", with how to see the next page;
    /// nil when nothing was cut.
    static func truncationNote(shown: Int, of count: CappedCount, nextAfter: Int64?) -> String? {
        guard count.capped || count.value > shown else { return nil }
        let total = count.capped ? "more than \(grouped(count.value))" : grouped(count.value)
        return "\(grouped(shown)) of \(total) shown" + (nextAfter.map { "; next page: --after \($0)" } ?? "")
    }

    static func list(_ command: ParsedCommand, io: ControlIO) throws {
        var search = try jobSearch(command)
        search.limit = try command.int("limit", range: 1...100_000) ?? 50
        try withDatabase(command, io: io) { db in
            let jobs = try db.jobsSearch(search)
            let count = jobs.count < search.limit ? CappedCount(counted: jobs.count, cap: JobsTable.listCountCap)
                : try db.jobsCount(search)
            let note = truncationNote(shown: jobs.count, of: count, nextAfter: jobs.last?.id)
            if command.flag("json") {
                try io.printJSON(jobs)
                if let note { io.printError("note: \(note)\n") }
            } else if !jobs.isEmpty {
                var table = TextTable(["ID", "QUEUE", "STATE", "PRI", "ATTEMPT", "RUN_AT", "METHOD", "URL"])
                for job in jobs {
                    table.add([String(job.id), job.queue, job.status.rawValue,
                               job.archivedFieldsOnly ? "-" : String(job.priority),
                               job.archivedFieldsOnly ? String(job.attempt) : "\(job.attempt)/\(job.maxAttempts)",
                               job.runAt.map(Timestamp.format) ?? "-", job.method, job.url ?? "(\(job.kind))"])
                }
                io.print(table.render() + (note.map { "\n" + $0 } ?? ""))
            }
            if jobs.isEmpty {
                try noteUnusedDestinations(command.values("destination"), on: db, io: io)
                throw ControlError.notFound("error: no job matched (states: \(search.states.map(\.rawValue).sorted().joined(separator: ", ")))")
            }
        }
    }

    static func retry(_ command: ParsedCommand, io: ControlIO) throws {
        let ids = try command.positionals("ids").map { try jobID($0, flag: "ID", command: command) }
        let outcomes = try withDatabase(command, io: io) { try $0.jobsRetryNow(ids: ids) }
        try printSteering(outcomes, done: "due now", command: command, io: io)
    }

    static func update(_ command: ParsedCommand, io: ControlIO) throws {
        let id = try jobID(command.positionals("id").first, flag: "ID", command: command)
        let now = Date()
        let runAt = try command.timestamp("run-at", now: now) ?? command.dateAfter("in", now: now)
        let priority = try command.int("priority", range: -32_768...32_767)
        let outcome = try withDatabase(command, io: io) { try $0.jobUpdate(id: id, runAt: runAt, priority: priority) }
        var changes: [String] = []
        if let runAt { changes.append("runs at \(Timestamp.format(runAt))") }
        if let priority { changes.append("priority \(priority)") }
        try printSteering([(id, outcome)], done: changes.joined(separator: ", "), command: command, io: io)
    }

    /// One line per id, or JSON `[{"id": 12, "outcome": "updated"}]`; exits 3 when nothing changed.
    static func printSteering(_ outcomes: [(id: Int64, outcome: JobsTable.SteerOutcome)], done: String,
                              command: ParsedCommand, io: ControlIO) throws {
        if command.flag("json") {
            try io.printJSON(outcomes.map { SteerOutcomeView(id: $0.id, outcome: $0.outcome) })
        } else {
            for (id, outcome) in outcomes {
                switch outcome {
                case .updated: io.print("\(id): \(done)")
                case .running: io.print("\(id): running; left as it is")
                case .notFound: io.print("\(id): no waiting job")
                }
            }
        }
        if !outcomes.contains(where: { $0.outcome == .updated }) {
            throw ControlError.notFound("error: none of the given ids is a waiting job")
        }
    }

    struct SteerOutcomeView: Encodable {
        var id: Int64
        var outcome: JobsTable.SteerOutcome
    }

    static func cancel(_ command: ParsedCommand, io: ControlIO) throws {
        let ids = try command.positionals("ids").map { try jobID($0, flag: "ID", command: command) }
        if ids.isEmpty {
            try cancelMatching(command, io: io)
            return
        }
        let outcomes = try withDatabase(command, io: io) { try $0.jobsCancel(ids: ids) }
        printCancelled(outcomes, command: command, io: io)
        if outcomes.allSatisfy({ $0.outcome == .notFound }) {
            throw ControlError.notFound("error: none of the given ids is a waiting or running job")
        }
    }

    static func printCancelled(_ outcomes: [(id: Int64, outcome: JobsTable.CancelOutcome)], command: ParsedCommand, io: ControlIO) {
        if command.flag("json") {
            try? io.printJSON(outcomes.map { CancelOutcomeView(id: $0.id, outcome: $0.outcome) })
        } else {
            for (id, outcome) in outcomes {
                switch outcome {
                case .cancelled: io.print("\(id): cancelled")
                case .cancelRequested: io.print("\(id): running; its worker will abort it and record the cancellation")
                case .notFound: io.print("\(id): no waiting or running job")
                }
            }
        }
    }

    /// How many jobs `cancel` by filter takes per transaction.
    static let cancelBatchSize = 1000

    /// `cancel` by filter: every waiting or running job that matches, in batches by id.
    static func cancelMatching(_ command: ParsedCommand, io: ControlIO) throws {
        var search = try jobSearch(command)
        search.states = [.available, .running]
        try withDatabase(command, io: io) { db in
            if command.flag("dry-run") {
                var counts: [String: Int] = [:]
                for state in [JobsTable.ListedState.available, .running] {
                    var one = search
                    one.states = [state]
                    counts[state.rawValue] = try db.jobsCount(one, cap: Int(Int32.max)).value
                }
                let total = counts.values.reduce(0, +)
                if command.flag("json") {
                    try io.printJSON(["would_cancel": total, "available": counts["available"] ?? 0, "running": counts["running"] ?? 0])
                } else {
                    io.print("dry run: \(grouped(total)) jobs would be cancelled (\(grouped(counts["available"] ?? 0)) waiting, "
                             + "\(grouped(counts["running"] ?? 0)) running); nothing was changed")
                }
                if total == 0 { try noteUnusedDestinations(command.values("destination"), on: db, io: io) }
                return
            }
            var all: [(id: Int64, outcome: JobsTable.CancelOutcome)] = []
            search.limit = cancelBatchSize
            while true {
                let batch = try db.jobsSearch(search)
                guard let last = batch.last else { break }
                all += try db.jobsCancel(ids: batch.map(\.id))
                search.afterID = last.id
            }
            let cancelled = all.filter { $0.outcome == .cancelled }.count
            let requested = all.filter { $0.outcome == .cancelRequested }.count
            if command.flag("json") {
                try io.printJSON(["cancelled": cancelled, "cancel_requested": requested])
            } else {
                io.print("cancelled \(grouped(cancelled)) waiting jobs; asked the workers of \(grouped(requested)) running jobs to abort them")
            }
            if cancelled + requested == 0 {
                try noteUnusedDestinations(command.values("destination"), on: db, io: io)
                throw ControlError.notFound("error: no waiting or running job matched")
            }
        }
    }
}
