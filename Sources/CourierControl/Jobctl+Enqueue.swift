import CourierCLI
import CourierCore
import CourierStore
import Foundation
import Postgres

extension Jobctl {
    static func enqueue(_ command: ParsedCommand, io: ControlIO) throws {
        if command.isSpecified("ndjson") {
            try enqueueNDJSON(command, io: io)
            return
        }
        var request = try enqueueRequest(from: command, io: io)
        if request.method.isEmpty { request.method = "POST" }
        do {
            try request.validate()
        } catch {
            throw ControlError.flag(error)
        }
        let id = try withDatabase(command, io: io) { try JobsTable.enqueue(request, on: $0) }
        if command.flag("json") {
            try io.printJSON(["id": id])
        } else {
            io.print(String(id))
        }
    }

    /// Builds a request from the single-job flags; errors name the flag.
    static func enqueueRequest(from command: ParsedCommand, io: ControlIO, now: Date = Date()) throws -> EnqueueRequest {
        guard let url = command.value("url") else {
            throw ControlError.badInput("error: --url: required (or use --ndjson FILE for many jobs)")
        }
        var request = EnqueueRequest(url: url)
        if let method = command.value("method") { request.method = method.uppercased() }
        for raw in command.values("header") {
            guard let colon = raw.firstIndex(of: ":") else {
                // The argument is not echoed: it may be a credential given without its name.
                throw command.invalid("header", "expected 'Name: value' but found no ':' (the value is not shown)")
            }
            let name = raw[..<colon].trimmingCharacters(in: .whitespaces)
            let value = raw[raw.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            request.headers.append((name, .literal(value)))
        }
        if let data = command.value("data") {
            request.body = try readData(data, io: io)
        }
        if let queue = command.value("queue") { request.queue = queue }
        if let priority = try command.int("priority") { request.priority = priority }
        if let runAt = try command.timestamp("run-at", now: now) { request.runAt = runAt }
        if let delay = try command.duration("in") { request.runAt = now.addingTimeInterval(delay.seconds) }
        if let attempts = try command.int("max-attempts") { request.maxAttempts = attempts }
        if let deadline = try command.timestamp("deadline", now: now) { request.deadline = deadline }
        if let within = try command.duration("within") { request.deadline = now.addingTimeInterval(within.seconds) }
        if command.flag("no-idempotency-key") {
            request.idempotencyKey = .none
        } else if let key = command.value("idempotency-key") {
            request.idempotencyKey = .custom(key)
        }
        request.uniqueKey = command.value("unique-key")
        request.destination = command.value("destination")
        if let timeout = try command.duration("timeout") {
            let ms = timeout.milliseconds
            guard ms >= 1, ms <= 3_600_000 else { throw command.invalid("timeout", "must be between 1ms and 1h") }
            request.timeoutMilliseconds = Int(ms)
        }
        request.expectContentType = command.value("expect-content-type")
        return request
    }

    /// `--data TEXT`, `--data @FILE` or `--data @-` (standard input).
    static func readData(_ argument: String, io: ControlIO) throws -> String {
        guard argument.hasPrefix("@") else { return argument }
        let path = String(argument.dropFirst())
        if path == "-" { return String(decoding: io.readStandardInput(), as: UTF8.self) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ControlError.badInput("error: --data: cannot read file '\(path)'")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Bulk enqueue from NDJSON: every line is checked first, then all jobs go in
    /// with one COPY in one transaction, or none do.
    static func enqueueNDJSON(_ command: ParsedCommand, io: ControlIO) throws {
        let source = command.value("ndjson") ?? "-"
        let data: Data
        if source == "-" {
            data = io.readStandardInput()
        } else {
            guard let contents = FileManager.default.contents(atPath: source) else {
                throw ControlError.badInput("error: --ndjson: cannot read file '\(source)'")
            }
            data = contents
        }
        let requests = try parseNDJSON(data)
        let progress = Progress(io: io, total: requests.count, label: "enqueued")
        let result = try withDatabase(command, io: io) {
            try JobsTable.enqueueMany(requests, on: $0, progress: { progress.update($0) })
        }
        progress.finish()
        if command.flag("json") {
            try io.printJSON(["enqueued": result.inserted, "skipped_unique": result.skippedByUniqueKey])
        } else if result.skippedByUniqueKey > 0 {
            io.print("\(result.inserted) (\(result.skippedByUniqueKey) skipped: a waiting or running job holds their unique_key)")
        } else {
            io.print(String(result.inserted))
        }
    }

    /// Parses and validates every non-blank line; the first bad one stops everything,
    /// with its line number and field.
    static func parseNDJSON(_ data: Data, now: Date = Date()) throws -> [EnqueueRequest] {
        var requests: [EnqueueRequest] = []
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let text = String(decoding: line, as: UTF8.self)
            if text.allSatisfy({ $0.isWhitespace }) { continue }
            do {
                let request = try EnqueueRequest(jsonLine: text)
                try request.validate(now: now)
                requests.append(request)
            } catch {
                throw ControlError.badInput("error: --ndjson line \(lineNumber): \(error.field): \(error.message); nothing was enqueued")
            }
        }
        guard !requests.isEmpty else { throw ControlError.badInput("error: --ndjson: no jobs in the input") }
        return requests
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
