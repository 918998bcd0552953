import CourierCLI
import CourierCore
import CourierStore
import Foundation

extension Jobctl {
    static func show(_ command: ParsedCommand, io: ControlIO) throws {
        let id = try jobID(command.positionals("id").first, flag: "ID", command: command)
        guard let job = try withDatabase(command, io: io, { try $0.jobGet(id: id) }) else {
            throw ControlError.notFound("error: no job \(id) (waiting, running, succeeded within retention, or dead)")
        }
        if command.flag("json") {
            try io.printJSON(job)
            return
        }
        var lines = [
            "id:              \(job.id)",
            "status:          \(job.status.rawValue)" + (job.deadReason.map { " (\($0))" } ?? ""),
            "kind:            \(job.kind)",
            "queue:           \(job.queue)",
            "destination:     \(job.destination)",
            "request:         " + (job.url.map { "\(job.method) \($0)" } ?? "kind \(job.kind)"),
            job.status == .succeeded ? "attempts:        \(job.attempt)" : "attempt:         \(job.attempt) of \(job.maxAttempts)",
            "idempotency key: \(job.idempotencyKey ?? "(none)")",
            "created:         \(Timestamp.format(job.createdAt))",
        ]
        if let runAt = job.runAt { lines.append("run at:          \(Timestamp.format(runAt))") }
        if let deadline = job.deadline { lines.append("deadline:        \(Timestamp.format(deadline))") }
        if let unique = job.uniqueKey { lines.append("unique key:      \(unique)") }
        if let key = job.fairnessKey { lines.append("fairness key:    \(key)") }
        if let traceparent = job.traceparent {
            lines.append("traceparent:     \(traceparent)" + (job.tracestate.map { " (tracestate \($0))" } ?? ""))
        }
        if let secret = job.signingSecret, let from = job.signingSecretFrom {
            lines.append("signed with:     secret \(secret) (\(signingSourceText(from)))")
        }
        if let finished = job.finishedAt { lines.append("finished:        \(Timestamp.format(finished))") }
        if let status = job.finalStatus { lines.append("final status:    \(status)") }
        if let duration = job.durationMilliseconds { lines.append("duration:        \(duration)ms") }
        if let worker = job.leasedBy { lines.append("leased by:       \(worker)") }
        if job.cancelRequestedAt != nil { lines.append("cancel:          requested") }
        if let letter = job.deadLetterID { lines.append("dead letter:     \(letter) (jobctl dead show \(letter))") }
        if job.heldSince != nil { lines.append("held:            the destination's circuit breaker is open (no attempts are used)") }
        if let refusal = job.refusal {
            lines.append("waits because:   no worker's configuration could run it, \(refusal.count) refusal\(refusal.count == 1 ? "" : "s") "
                         + "since \(Timestamp.format(refusal.since)); the last: \(refusal.reason)")
        }
        for name in job.headers.keys.sorted() {
            lines.append("header:          \(name): \(job.headers[name] ?? "")")
        }
        if !job.errors.isEmpty {
            lines.append("attempts:")
            for attempt in job.errors {
                let status = attempt.status.map { " \($0)" } ?? ""
                let duration = attempt.durationMilliseconds.map { " \($0)ms" } ?? ""
                lines.append("  #\(attempt.attempt) \(attempt.errorClass)\(status)\(duration) \(attempt.startedAt ?? ""): \(attempt.message)")
            }
        }
        io.print(lines.joined(separator: "\n"))
    }

    /// How `show` and `dead show` say where a signing secret name came from.
    static func signingSourceText(_ source: SigningSecretChoice.Source) -> String {
        switch source {
        case .job: "the job's own"
        case .destination: "the destination's default"
        }
    }

    static func jobID(_ text: String?, flag: String, command: ParsedCommand) throws -> Int64 {
        guard let text, let id = Int64(text), id > 0 else {
            throw ControlError.badInput("error: \(flag): expected a positive job id, got '\(text ?? "")'")
        }
        return id
    }

    /// One line of `cancel --json`: `{"id": 12, "outcome": "cancelled"}`.
    struct CancelOutcomeView: Encodable {
        var id: Int64
        var outcome: JobsTable.CancelOutcome
    }

    static func workers(_ command: ParsedCommand, io: ControlIO) throws {
        let workers = try withDatabase(command, io: io) { try $0.workersLive() }
        if command.flag("json") {
            try io.printJSON(workers)
            return
        }
        var table = TextTable(["ID", "HOST", "PID", "QUEUES", "STARTED", "HEARTBEAT", "STATE", "JOBS"])
        for w in workers {
            let jobs = w.jobs.count <= 10 ? w.jobs.map(String.init).joined(separator: ",")
                : w.jobs.prefix(10).map(String.init).joined(separator: ",") + ",… (\(w.jobs.count))"
            table.add([w.id, w.host, String(w.pid), w.queues.joined(separator: ","), Timestamp.format(w.startedAt),
                       Timestamp.format(w.heartbeatAt), w.stopping ? "stopping" : "running", jobs.isEmpty ? "-" : jobs])
        }
        io.print(table.render())
    }

    static func devdb(_ command: ParsedCommand, io: ControlIO) throws {
        let directory = command.value("dir") ?? DevDatabase.Configuration.defaultDirectory(environment: io.environment)
        let port = try command.int("port", range: 1...65535) ?? DevDatabase.Configuration.defaultPort
        let starting = command.path.last == "start"
        // TCP only when asked for: a --port given to start (the socket's name needs a port either way).
        let tcp = starting && command.isSpecified("port")
        let database = DevDatabase(configuration: .init(directory: directory, port: port, tcp: tcp, fast: starting && command.flag("fast")))
        do {
            switch command.path.last {
            case "start":
                let url = try database.start()
                io.print(url)
                if tcp {
                    io.writeErr("devdb: also on 127.0.0.1:\(port), with the password in \(database.passwordFile) "
                                + "(for libpq: PGPASSFILE=\(database.passwordFile))\n")
                }
            case "stop":
                try database.stop()
                io.writeErr("stopped\n")
            default:
                let running = try database.isRunning()
                if command.flag("json") {
                    try io.printJSON(["running": running ? "true" : "false", "url": database.databaseURL, "dir": directory])
                } else {
                    io.print(running ? "running: \(database.databaseURL)" : "stopped (\(directory))")
                }
                if !running { throw ControlError(exitCode: 3, description: "") }
            }
        } catch let error as DevDatabase.Failure {
            throw ControlError.runtime("error: devdb: \(error.description)")
        }
    }
}
