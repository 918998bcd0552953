import CourierCore
import Foundation
import Postgres

/// The job each run of a schedule enqueues, as stored in `courier.schedules.template`.
///
/// An HTTP job has the fields of an NDJSON line / `courier.enqueue` (read by the same
/// parser, ``EnqueueRequest/init(jsonLine:)``) except `run_at`, `deadline` and
/// `idempotency_key`, which each run sets itself: it runs at its slot, with the key
/// ``idempotencyKey(schedule:slot:)``, and, with `within_ms`, a deadline that long after
/// the slot. A handler job has `kind` and `args` and the other `courier.enqueue_job` fields.
public struct ScheduleTemplate: Sendable, Equatable {
    /// A job for a Swift handler, as `courier.enqueue_job` takes it.
    public struct HandlerJob: Sendable, Equatable {
        public var kind: String
        /// The `args` object as JSON text.
        public var args: String = "{}"
        public var queue = "default"
        public var priority = 0
        public var maxAttempts = JobDefaults.maxAttempts
        public var uniqueKey: String?
        public var destination: String?
        public var timeoutMilliseconds = JobDefaults.timeoutMilliseconds
        /// The runs' fairness key (``FairnessKey``); nil: the default key.
        public var fairnessKey: String?
        public init(kind: String) { self.kind = kind }
    }

    public enum Job: Sendable, Equatable {
        case http(EnqueueRequest)
        case handler(HandlerJob)
    }

    public var job: Job
    /// Each run's deadline, this long after its slot (`--within`).
    public var withinMilliseconds: Int64?

    public init(job: Job, withinMilliseconds: Int64? = nil) {
        self.job = job
        self.withinMilliseconds = withinMilliseconds
    }

    /// Fields a template may not carry, because each run sets them.
    /// (`traceparent` and `tracestate` too: a run has no enqueuing span to link to.)
    public static let runFields: Set<String> = ["run_at", "deadline", "idempotency_key", "traceparent", "tracestate"]
    /// The fields of a handler job.
    public static let handlerFields: Set<String> = [
        "kind", "args", "queue", "priority", "max_attempts", "unique_key", "destination", "timeout_ms", "within_ms",
        "fairness_key",
    ]

    /// The idempotency key of one run: `schedule:<name>:<slot in UTC, RFC 3339>`.
    public static func idempotencyKey(schedule: String, slot: Date) -> String {
        "schedule:\(schedule):\(slot.formatted(Date.ISO8601FormatStyle()))"
    }

    /// Reads a template from its JSON object text; errors name the field.
    public init(json: String) throws(ValidationError) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        } catch {
            throw ValidationError(field: "template", message: "is not valid JSON")
        }
        guard var object = parsed as? [String: Any] else {
            throw ValidationError(field: "template", message: "must be a JSON object")
        }
        if let field = object.keys.filter({ Self.runFields.contains($0) }).sorted().first {
            if field.hasPrefix("trace") {
                throw ValidationError(field: field, message: "is not kept by schedules: a run has no enqueuing span; leave it out of a schedule's job")
            }
            throw ValidationError(field: field, message: "is set by each run (its slot, within_ms, and the key schedule:NAME:SLOT); leave it out of a schedule's job")
        }
        var within: Int64?
        if let raw = object.removeValue(forKey: "within_ms"), !(raw is NSNull) {
            guard let number = raw as? NSNumber, let value = Int64(exactly: number.doubleValue), value >= 1 else {
                throw ValidationError(field: "within_ms", message: "must be a positive whole number of milliseconds")
            }
            within = value
        }
        withinMilliseconds = within
        if object["kind"] != nil {
            if let unknown = object.keys.filter({ !Self.handlerFields.contains($0) }).sorted().first {
                throw ValidationError(field: unknown, message: "is not a field of a handler job (expected one of: \(Self.handlerFields.sorted().joined(separator: ", ")))")
            }
            job = .handler(try Self.handlerJob(object))
        } else {
            let line: Data
            do {
                line = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            } catch {
                throw ValidationError(field: "template", message: "is not valid JSON")
            }
            var request = try EnqueueRequest(jsonLine: String(decoding: line, as: UTF8.self))
            request.method = request.method.asciiUppercased
            try request.validate()
            job = .http(request)
        }
    }

    private static func handlerJob(_ object: [String: Any]) throws(ValidationError) -> HandlerJob {
        func integer(_ key: String, _ range: ClosedRange<Int>) throws(ValidationError) -> Int? {
            guard let raw = object[key], !(raw is NSNull) else { return nil }
            guard let number = raw as? NSNumber, let value = Int(exactly: number.doubleValue), range.contains(value) else {
                throw ValidationError(field: key, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        func string(_ key: String) throws(ValidationError) -> String? {
            guard let raw = object[key], !(raw is NSNull) else { return nil }
            guard let text = raw as? String, !text.isEmpty else { throw ValidationError(field: key, message: "must be a non-empty string") }
            return text
        }
        guard let kind = try string("kind"), kind != "http", kind.utf8.count <= 64,
              kind.range(of: "^[a-z][a-z0-9_.-]*$", options: .regularExpression) != nil else {
            throw ValidationError(field: "kind", message: "must be a lower-case name other than http (up to 64 of a-z 0-9 _ . -)")
        }
        var job = HandlerJob(kind: kind)
        if let args = object["args"], !(args is NSNull) {
            guard args is [String: Any], let data = try? JSONSerialization.data(withJSONObject: args, options: [.sortedKeys]) else {
                throw ValidationError(field: "args", message: "must be a JSON object")
            }
            job.args = String(decoding: data, as: UTF8.self)
        }
        if let queue = try string("queue") {
            guard QueueName.isValid(queue) else {
                throw ValidationError(field: "queue", message: "must be 1 to 64 characters of letters, digits, _ . : -")
            }
            job.queue = queue
        }
        job.priority = try integer("priority", -32_768...32_767) ?? 0
        job.maxAttempts = try integer("max_attempts", 1...1_000) ?? JobDefaults.maxAttempts
        job.timeoutMilliseconds = try integer("timeout_ms", 1...3_600_000) ?? JobDefaults.timeoutMilliseconds
        job.uniqueKey = try string("unique_key")
        job.destination = try string("destination")
        if let key = try string("fairness_key") {
            try FairnessKey.validate(key)
            job.fairnessKey = key
        }
        return job
    }

    /// The `courier.enqueue` fields ``json`` writes for an HTTP job. Every NDJSON field but
    /// ``runFields`` must be here (a test holds the two lists together), or a field added to
    /// `courier.enqueue` would be dropped from schedules.
    public static let httpFields: Set<String> = [
        "url", "method", "headers", "body", "queue", "priority", "max_attempts", "unique_key", "destination",
        "timeout_ms", "expect_content_type", "signing_secret", "fairness_key",
    ]

    /// The template as the JSON object stored in the database, keys sorted.
    public var json: String {
        var fields: [(String, String)] = []
        func quoted(_ text: String) -> String {
            var out = ""
            JSONText.appendQuoted(text, to: &out)
            return out
        }
        switch job {
        case .http(let r):
            fields.append(("url", quoted(r.url)))
            fields.append(("method", quoted(r.method)))
            fields.append(("headers", r.headersJSON))
            if let body = r.body { fields.append(("body", quoted(body))) }
            fields.append(("queue", quoted(r.queue)))
            fields.append(("priority", String(r.priority)))
            fields.append(("max_attempts", String(r.maxAttempts)))
            if let key = r.uniqueKey { fields.append(("unique_key", quoted(key))) }
            if let destination = r.destination { fields.append(("destination", quoted(destination))) }
            fields.append(("timeout_ms", String(r.timeoutMilliseconds)))
            if let type = r.expectContentType { fields.append(("expect_content_type", quoted(type))) }
            if let name = r.signingSecret { fields.append(("signing_secret", quoted(name))) }
            if let key = r.fairnessKey { fields.append(("fairness_key", quoted(key))) }
        case .handler(let h):
            fields.append(("kind", quoted(h.kind)))
            fields.append(("args", h.args))
            fields.append(("queue", quoted(h.queue)))
            fields.append(("priority", String(h.priority)))
            fields.append(("max_attempts", String(h.maxAttempts)))
            if let key = h.uniqueKey { fields.append(("unique_key", quoted(key))) }
            if let destination = h.destination { fields.append(("destination", quoted(destination))) }
            fields.append(("timeout_ms", String(h.timeoutMilliseconds)))
            if let key = h.fairnessKey { fields.append(("fairness_key", quoted(key))) }
        }
        if let within = withinMilliseconds { fields.append(("within_ms", String(within))) }
        return "{" + fields.sorted { $0.0 < $1.0 }.map { quoted($0.0) + ": " + $0.1 }.joined(separator: ", ") + "}"
    }

    /// The stored template `json` made safe to show, by the rules `jobctl show` applies to a
    /// job: the URL with the values of sensitive query parameters redacted
    /// (``Redaction/redactURL(_:)``), and the literal value of every sensitive header
    /// (``Redaction/isSensitiveHeader(_:)``) replaced by ``Redaction/placeholder``; secret
    /// references and everything else as stored, keys sorted. It reads any stored text, not
    /// only a template this parser accepts (a schedule added through SQL with a mistake is
    /// shown too); text that is not a JSON object is not shown at all.
    public static func displayJSON(_ json: String) -> String {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else {
            return "\"\(Redaction.placeholder)\""
        }
        if let url = object["url"] as? String { object["url"] = Redaction.redactURL(url) }
        if var headers = object["headers"] as? [String: Any] {
            for (name, value) in headers where value is String && Redaction.isSensitiveHeader(name) {
                headers[name] = Redaction.placeholder
            }
            object["headers"] = headers
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return "\"\(Redaction.placeholder)\""
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The queue the runs' jobs go to.
    public var queue: String {
        switch job {
        case .http(let r): r.queue
        case .handler(let h): h.queue
        }
    }

    /// Enqueues the run for `slot` on `connection` (inside the caller's transaction) and returns the job id.
    public func enqueue(schedule: String, slot: Date, on connection: PostgresConnection) throws -> Int64 {
        let key = Self.idempotencyKey(schedule: schedule, slot: slot)
        let deadline = withinMilliseconds.map { slot.addingTimeInterval(Double($0) / 1000) }
        switch job {
        case .http(var request):
            request.runAt = slot
            request.deadline = deadline
            request.idempotencyKey = .custom(key)
            return try JobsTable.enqueue(request, on: connection)
        case .handler(let h):
            let rows = try connection.query("""
                select courier.enqueue_job(kind => \(h.kind)::text, args => \(PostgresJSON(h.args)), queue => \(h.queue)::text,
                    priority => \(h.priority)::int, run_at => \(slot)::timestamptz, max_attempts => \(h.maxAttempts)::int,
                    deadline => \(deadline)::timestamptz, idempotency_key => \(key)::text, unique_key => \(h.uniqueKey)::text,
                    destination => \(h.destination)::text, timeout_ms => \(h.timeoutMilliseconds)::int,
                    fairness_key => \(h.fairnessKey)::text)
                """).rows
            return try rows[0].decode(0, as: Int64.self)
        }
    }
}
