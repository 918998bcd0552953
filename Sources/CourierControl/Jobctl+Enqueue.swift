import CourierCLI
import CourierCore
import CourierStore
import Dispatch
import Foundation

extension Jobctl {
    static func enqueue(_ command: ParsedCommand, io: ControlIO) throws {
        if command.isSpecified("ndjson") {
            try enqueueNDJSON(command, io: io)
            return
        }
        // `--method ''` is refused by validate(), not read as POST.
        let request = try enqueueRequest(from: command, io: io)
        do {
            try request.validate()
        } catch {
            throw ControlError.flag(error)
        }
        let id = try withDatabase(command, io: io) { try $0.jobEnqueue(request) }
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
        try applyJobFlags(to: &request, from: command, io: io, now: now)
        return request
    }

    /// Sets the request's fields whose flags have a value (given, or a declared default), so
    /// `enqueue` and the `schedule` commands (which declare the same flags, see
    /// `JobctlCommands.scheduleJobFlags`) read them one way. Flags a command does not declare
    /// are skipped; with `now` nil (schedules) the times relative to now are skipped too.
    static func applyJobFlags(to request: inout EnqueueRequest, from command: ParsedCommand, io: ControlIO,
                              now: Date?) throws {
        func declares(_ name: String) -> Bool { command.arguments.contains { $0.long == name } }
        if let url = command.value("url") { request.url = url }
        if let method = command.value("method") { request.method = method.uppercased() }
        let headers = command.values("header")
        if !headers.isEmpty { request.headers = [] }
        for raw in headers {
            guard let colon = raw.firstIndex(of: ":") else {
                // Never echo the text: 'Authorization Bearer …' without its colon is still a secret.
                throw command.invalid("header", "expected 'Name: value', got a value without a colon")
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
        if let now, declares("run-at") {
            if let runAt = try command.timestamp("run-at", now: now) { request.runAt = runAt }
            if let runAt = try command.dateAfter("in", now: now) { request.runAt = runAt }
        }
        if let attempts = try command.int("max-attempts") { request.maxAttempts = attempts }
        if let now, declares("deadline") {
            if let deadline = try command.timestamp("deadline", now: now) { request.deadline = deadline }
            if let deadline = try command.dateAfter("within", now: now) { request.deadline = deadline }
        }
        if declares("idempotency-key") {
            if command.flag("no-idempotency-key") {
                request.idempotencyKey = .none
            } else if let key = command.value("idempotency-key") {
                request.idempotencyKey = .custom(key)
            }
        }
        if let key = command.value("unique-key") { request.uniqueKey = key }
        if let destination = command.value("destination") { request.destination = destination }
        if let ms = try timeoutMilliseconds(command) { request.timeoutMilliseconds = ms }
        if let type = command.value("expect-content-type") { request.expectContentType = type }
        if let name = command.value("signing-secret") { request.signingSecret = name }
        if let key = command.value("fairness-key") { request.fairnessKey = key }
        // Only `enqueue` declares them: a schedule's runs have no enqueuing span.
        if declares("traceparent"), let traceparent = command.value("traceparent") { request.traceparent = traceparent }
        if declares("tracestate"), let tracestate = command.value("tracestate") { request.tracestate = tracestate }
    }

    /// `--timeout`, in milliseconds, 1 ms to 1 h.
    static func timeoutMilliseconds(_ command: ParsedCommand) throws -> Int? {
        guard let timeout = try command.duration("timeout") else { return nil }
        let ms = timeout.milliseconds
        guard ms >= 1, ms <= 3_600_000 else { throw command.invalid("timeout", "must be between 1ms and 1h") }
        return Int(ms)
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
            try $0.jobsEnqueueMany(requests, progress: { progress.update($0) })
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
        let requests = try data.withUnsafeBytes { raw in
            try parseNDJSON(raw.bindMemory(to: UInt8.self), now: now)
        }
        guard !requests.isEmpty else { throw ControlError.badInput("error: --ndjson: no jobs in the input") }
        return requests
    }

    private static func parseNDJSON(_ bytes: UnsafeBufferPointer<UInt8>, now: Date) throws -> [EnqueueRequest] {
        let lines = lineRanges(bytes)
        let shared = SharedBytes(buffer: bytes)

        // Parsing is the client's share of a bulk load: spread it over the cores, chunk by
        // chunk, keep the order, and report the first bad line as a serial parse would.
        let chunkSize = 5_000
        let chunkCount = (lines.count + chunkSize - 1) / chunkSize
        let results = ChunkResults(count: chunkCount)
        DispatchQueue.concurrentPerform(iterations: chunkCount) { chunk in
            var requests: [EnqueueRequest] = []
            requests.reserveCapacity(chunkSize)
            for index in (chunk * chunkSize)..<min(lines.count, (chunk + 1) * chunkSize) {
                let line = UnsafeBufferPointer(rebasing: shared.buffer[lines[index]])
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                do throws(ValidationError) {
                    let request = try EnqueueRequest(jsonLineBytes: line)
                    try request.validate(now: now)
                    requests.append(request)
                } catch {
                    results.set(chunk, .failure(.badInput("error: --ndjson line \(index + 1): \(error.field): \(error.message); nothing was enqueued")))
                    return
                }
            }
            results.set(chunk, .success(requests))
        }
        var requests: [EnqueueRequest] = []
        requests.reserveCapacity(lines.count)
        for chunk in 0..<chunkCount {
            switch results.get(chunk) {
            case .success(let parsed): requests += parsed
            case .failure(let error): throw error
            case nil: throw ControlError.runtime("error: --ndjson: a chunk was not parsed")
            }
        }
        return requests
    }
}

/// The ranges of the lines of `bytes`, without their newlines. A UTF-8 byte order
/// mark at the start, as some Windows tools write, is not part of line 1.
private func lineRanges(_ bytes: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
    var lines: [Range<Int>] = []
    let hasByteOrderMark = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
    var lineStart = hasByteOrderMark ? 3 : 0
    for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
        lines.append(lineStart..<index)
        lineStart = index + 1
    }
    if lineStart < bytes.count { lines.append(lineStart..<bytes.count) }
    return lines
}

/// The input bytes, shared read-only by the parse workers; `concurrentPerform` returns
/// before the buffer goes away.
private struct SharedBytes: @unchecked Sendable {
    let buffer: UnsafeBufferPointer<UInt8>
}

/// Per-chunk parse results, written by concurrent workers, read once they are done.
private final class ChunkResults: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<[EnqueueRequest], ControlError>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ result: Result<[EnqueueRequest], ControlError>) { lock.withLock { slots[index] = result } }
    func get(_ index: Int) -> Result<[EnqueueRequest], ControlError>? { lock.withLock { slots[index] } }
}
