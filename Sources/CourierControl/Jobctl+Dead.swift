import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    /// The dead-letter filters shared by `dead list` and `dead replay`; bad values name the flag.
    static func deadLetterFilter(_ command: ParsedCommand, now: Date = Date()) throws -> DeadLettersTable.Filter {
        func list(_ name: String) -> [String]? {
            let values = command.values(name)
            return values.isEmpty ? nil : values
        }
        var filter = DeadLettersTable.Filter()
        filter.reasons = list("reason")
        filter.destinations = list("destination").map(destinationCandidates)
        filter.queues = list("queue")
        filter.classes = list("class")
        let statuses = try command.ints("status", range: 100...599)
        filter.statuses = statuses.isEmpty ? nil : statuses
        filter.since = try command.timestamp("since", now: now)
        filter.until = try command.timestamp("until", now: now)
        if let since = filter.since, let until = filter.until, since >= until {
            throw command.invalid("until", "must be later than --since")
        }
        return filter
    }

    static func deadLetterIDs(_ texts: [String], flag: String) throws -> [Int64] {
        try texts.map { text in
            guard let id = Int64(text), id > 0 else {
                throw ControlError.badInput("error: \(flag): expected a positive dead letter id, got '\(text)'")
            }
            return id
        }
    }

    static func deadList(_ command: ParsedCommand, io: ControlIO) throws {
        var filter = try deadLetterFilter(command)
        let ids = try deadLetterIDs(command.values("id"), flag: "--id")
        filter.ids = ids.isEmpty ? nil : ids
        filter.limit = try command.int("limit", range: 1...1_000_000) ?? 50
        let (letters, note) = try withDatabase(command, io: io) { db in
            let letters = try db.deadLettersList(filter)
            if letters.isEmpty { try noteUnusedDestinations(command.values("destination"), on: db, io: io) }
            let count = letters.count < filter.limit! ? CappedCount(counted: letters.count, cap: JobsTable.listCountCap)
                : try db.deadLettersCount(filter)
            return (letters, truncationNote(shown: letters.count, of: count, nextAfter: nil))
        }
        if letters.isEmpty && !command.flag("json") {
            throw ControlError.notFound("error: no dead letter matched")
        }
        if command.flag("json") {
            try io.printJSON(letters)
            if let note { io.printError("note: \(note)\n") }
            if letters.isEmpty { throw ControlError.notFound("") }
            return
        }
        var table = TextTable(["ID", "JOB", "REASON", "CLASS", "STATUS", "ATTEMPTS", "FAILED_AT", "REPLAYED", "DESTINATION", "REQUEST"])
        for l in letters {
            table.add([String(l.id), String(l.jobID), l.reason, l.lastClass ?? "-", l.lastStatus.map(String.init) ?? "-",
                       String(l.attempt), Timestamp.format(l.failedAt), l.replayedAt.map { _ in "yes" } ?? "no",
                       l.destination, "\(l.method) \(l.url ?? "")"])
        }
        io.print(table.render() + (note.map { "\n" + $0 + " (narrow with --since, --until or the filters)" } ?? ""))
    }

    static func deadShow(_ command: ParsedCommand, io: ControlIO) throws {
        let letter = try findDeadLetter(command, io: io)
        if command.flag("json") {
            try io.printJSON(letter)
            return
        }
        var lines = [
            "dead letter:     \(letter.id) (job \(letter.jobID))",
            "reason:          \(letter.reason)",
            "last error:      \(letter.lastClass ?? "-")" + (letter.lastStatus.map { " (HTTP \($0))" } ?? ""),
            "queue:           \(letter.queue)",
            "destination:     \(letter.destination)",
            "request:         \(letter.method) \(letter.url ?? "")",
            "attempts:        \(letter.attempt) of \(letter.maxAttempts)",
            "idempotency key: \(letter.idempotencyKey ?? "(none)")",
            "enqueued:        \(Timestamp.format(letter.createdAt))",
            "failed:          \(Timestamp.format(letter.failedAt))",
        ]
        if let secret = letter.signingSecret, let from = letter.signingSecretFrom {
            lines.append("signed with:     secret \(secret) (\(signingSourceText(from)))")
        }
        if let worker = letter.worker { lines.append("worker:          \(worker)") }
        if let traceparent = letter.traceparent {
            lines.append("traceparent:     \(traceparent)" + (letter.tracestate.map { " (tracestate \($0))" } ?? ""))
        }
        if let deadline = letter.deadline { lines.append("deadline:        \(Timestamp.format(deadline))") }
        if let replayed = letter.replayedAt {
            lines.append("replayed:        \(Timestamp.format(replayed)) as job \(letter.replayJobID.map(String.init) ?? "?")")
        }
        for name in letter.headers.keys.sorted() { lines.append("header:          \(name): \(letter.headers[name] ?? "")") }
        if let body = letter.body { lines.append("body:            \(body.count > 200 ? String(body.prefix(200)) + "…" : body)") }
        lines.append("history:")
        for attempt in letter.errors {
            let status = attempt.status.map { " \($0)" } ?? ""
            let duration = attempt.durationMilliseconds.map { " \($0)ms" } ?? ""
            lines.append("  #\(attempt.attempt) \(attempt.errorClass)\(status)\(duration) \(attempt.startedAt ?? ""): \(attempt.message)")
        }
        io.print(lines.joined(separator: "\n"))
    }

    /// The dead letter `dead show` means: by its own id, by `--job ID`, or by the job's id
    /// when no dead letter has the id given (with a note, since the two ids differ).
    static func findDeadLetter(_ command: ParsedCommand, io: ControlIO) throws -> DeadLettersTable.Letter {
        if let job = command.value("job") {
            let jobID = try jobID(job, flag: "--job", command: command)
            guard let letter = try withDatabase(command, io: io, { try $0.deadLetterGet(jobID: jobID) }) else {
                throw ControlError.notFound("error: job \(jobID) has no dead letter")
            }
            return letter
        }
        let id = try deadLetterIDs(Array(command.positionals("id").prefix(1)), flag: "ID").first ?? 0
        let (byID, byJob) = try withDatabase(command, io: io) { db in
            (try db.deadLetterGet(id: id), try db.deadLetterGet(jobID: id))
        }
        if let letter = byID {
            if let other = byJob, other.id != letter.id {
                io.printError("note: this is dead letter \(id) (of job \(letter.jobID)); job \(id)'s dead letter is \(other.id): use --job \(id)\n")
            }
            return letter
        }
        if let letter = byJob {
            io.printError("note: no dead letter has id \(id); showing job \(id)'s dead letter, \(letter.id)\n")
            return letter
        }
        throw ControlError.notFound("error: no dead letter \(id), and no job \(id) in the dead letters")
    }

    struct ReplaySummary: Encodable {
        var replayed: Int
        var dryRun: Bool
        var ratePerSecond: Double?
        var byDestination: [String: Int]
        var firstRunAt: Date?
        var lastRunAt: Date?
        enum CodingKeys: String, CodingKey {
            case replayed, dryRun = "dry_run", ratePerSecond = "rate_per_second", byDestination = "by_destination"
            case firstRunAt = "first_run_at", lastRunAt = "last_run_at"
        }
    }

    static func deadReplay(_ command: ParsedCommand, io: ControlIO) throws {
        var filter = try deadLetterFilter(command)
        let ids = try deadLetterIDs(command.positionals("ids"), flag: "ID")
        filter.ids = ids.isEmpty ? nil : ids
        filter.limit = try command.int("limit", range: 1...100_000_000)
        filter.includeReplayed = command.flag("force")
        if command.flag("all") && !command.flag("include-cancelled") {
            // Someone cancelled those on purpose: --all does not undo that unasked.
            filter.reasons = DeadLettersTable.reasonsReplayedByAll
        }
        let rate = try command.rate("rate")?.perSecond
        let json = command.flag("json")
        try withDatabase(command, io: io) { db in
            if command.flag("dry-run") {
                try printDryRun(db.deadLettersCountByDestination(filter), rate: rate, json: json, io: io)
                return
            }
            // Two forced replays at once would each replay the dead letters the other replays.
            if filter.includeReplayed {
                guard try db.deadLettersTryLockForcedReplay() else {
                    throw ControlError.runtime("error: another 'jobctl dead replay --force' is running on this database; "
                        + "wait for it to finish (two at once would replay the same dead letters twice)")
                }
            }
            defer { if filter.includeReplayed { try? db.deadLettersUnlockForcedReplay() } }
            // The database's clock paces the replay and fences --force, never this machine's.
            let startAt = try db.databaseNow()
            let total = try db.deadLettersCountByDestination(filter).reduce(0) { $0 + $1.count }
            // Progress only on a terminal, and not with --json: otherwise a summary at the end.
            let progress = Progress(io: json ? io.withoutTerminal : io, total: total, label: "replayed")
            var summary = ReplaySummary(replayed: 0, dryRun: false, ratePerSecond: rate, byDestination: [:],
                                        firstRunAt: nil, lastRunAt: nil)
            // Chunks keep each transaction short, so a big replay never holds the queue up.
            while true {
                let chunk = min(replayChunkSize, (filter.limit ?? Int.max) - summary.replayed)
                guard chunk > 0 else { break }
                let replayed = try db.deadLettersReplayChunk(
                    filter, ratePerSecond: rate, startAt: startAt, startIndex: summary.replayed, chunk: chunk,
                    dryRun: false, replayedBefore: filter.includeReplayed ? startAt : nil)
                if replayed.isEmpty { break }
                summary.replayed += replayed.count
                for r in replayed { summary.byDestination[r.destination, default: 0] += 1 }
                summary.firstRunAt = summary.firstRunAt ?? replayed.first?.runAt
                summary.lastRunAt = replayed.last?.runAt ?? summary.lastRunAt
                progress.update(summary.replayed)
            }
            progress.finish()
            if json {
                try io.printJSON(summary)
            } else {
                io.print(summaryLine(summary))
            }
            if summary.replayed == 0 && !ids.isEmpty {
                throw ControlError.notFound("error: none of the given dead letters can be replayed (unknown, or replayed before: use --force)")
            }
        }
    }

    /// How many dead letters one replay transaction takes.
    static let replayChunkSize = 5000

    static func printDryRun(_ counts: [(destination: String, count: Int)], rate: Double?, json: Bool, io: ControlIO) throws {
        let total = counts.reduce(0) { $0 + $1.count }
        if json {
            try io.printJSON(ReplaySummary(replayed: total, dryRun: true, ratePerSecond: rate,
                                           byDestination: Dictionary(uniqueKeysWithValues: counts.map { ($0.destination, $0.count) }),
                                           firstRunAt: nil, lastRunAt: nil))
            return
        }
        var table = TextTable(["DESTINATION", "DEAD_LETTERS"])
        for row in counts { table.add([row.destination, String(row.count)]) }
        if !counts.isEmpty { io.print(table.render()) }
        var line = "dry run: \(total) dead letters would be replayed"
        if let rate, total > 1 { line += String(format: ", over about %.1fs at %g/s", Double(total - 1) / rate, rate) }
        io.print(line + "; nothing was changed")
    }

    /// `replayed 60 dead letters (http://api:80: 60), paced over 2.9s at 20/s`
    static func summaryLine(_ summary: ReplaySummary) -> String {
        var line = "replayed \(summary.replayed) dead letters"
        if !summary.byDestination.isEmpty {
            let parts = summary.byDestination.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(5)
                .map { "\($0.key): \($0.value)" }
            let more = summary.byDestination.count > 5 ? ", and \(summary.byDestination.count - 5) more destinations" : ""
            line += " (" + parts.joined(separator: ", ") + more + ")"
        }
        if let first = summary.firstRunAt, let last = summary.lastRunAt, let rate = summary.ratePerSecond, summary.replayed > 1 {
            line += String(format: ", paced over %.1fs at %g/s", last.timeIntervalSince(first), rate)
        }
        return line
    }

    static func deadPurge(_ command: ParsedCommand, io: ControlIO) throws {
        let ids = try deadLetterIDs(command.positionals("ids"), flag: "ID")
        let olderThan = try command.duration("older-than", minimum: .seconds(1))
        guard !ids.isEmpty || olderThan != nil else {
            throw ControlError.badInput("error: give dead letter ids or --older-than DURATION")
        }
        let deleted = try withDatabase(command, io: io) { db in
            ids.isEmpty ? try db.deadLettersPurge(olderThanMilliseconds: Int64(olderThan!.milliseconds))
                : try db.deadLettersPurge(ids: ids)
        }
        if command.flag("json") { try io.printJSON(["purged": deleted]) } else { io.print("purged \(deleted) dead letters") }
        if deleted == 0 && !ids.isEmpty { throw ControlError.notFound("error: no dead letter matched") }
    }
}
