import CourierCLI
import CourierCore
import CourierHTTPServer
import CourierStore
import Foundation

/// The JSON API (`GET /api/...`) and the actions (`POST /api/...`), which the pages'
/// forms use too: with a `return_to` field a form gets a redirect back, else JSON.
extension Dashboard {
    func api(_ request: HTTPServer.Request) throws -> HTTPServer.Response {
        let params = Params(request)
        let path = request.path
        switch path {
        case "/api/stats":
            let (overview, milliseconds) = try snapshot.getTimed()
            var stats = StatsJSON(overview)
            stats.snapshotMilliseconds = milliseconds
            return Self.json(200, stats)
        case "/api/jobs":
            let page = try store.jobsPage(try jobsQuery(params))
            return Self.json(200, JobsPageJSON(jobs: page.jobs, next: page.next.map(String.init), windowExhausted: page.windowExhausted))
        case "/api/dead":
            let page = try store.deadPage(try deadQuery(params))
            return Self.json(200, DeadPageJSON(deadLetters: page.letters,
                                               next: page.next.map { Cursor.format(failedAtMicros: $0.failedAtMicros, id: $0.id) }))
        case "/api/breakers":
            return Self.json(200, BreakersJSON(breakers: try store.breakers(), events: try store.breakerEvents(destination: params.first("destination"))))
        case "/api/workers":
            return Self.json(200, try store.workers())
        case "/api/queues":
            return Self.json(200, try store.queueLoads())
        case "/api/destinations":
            return Self.json(200, try store.destinations())
        default:
            if let id = Self.id(path, prefix: "/api/jobs/") {
                guard let job = try store.job(id: id) else { return Self.json(404, ["error": "no job \(id)"]) }
                return Self.json(200, job)
            }
            if let id = Self.id(path, prefix: "/api/dead/") {
                guard let letter = try store.deadLetter(id: id) else { return Self.json(404, ["error": "no dead letter \(id)"]) }
                return Self.json(200, letter)
            }
            return Self.json(404, ["error": "no such API: \(path)"])
        }
    }

    /// `/api/jobs/42` → 42; nil unless the rest is a positive id.
    static func id(_ path: String, prefix: String, suffix: String = "") -> Int64? {
        guard path.hasPrefix(prefix), path.hasSuffix(suffix) else { return nil }
        let middle = path.dropFirst(prefix.count).dropLast(suffix.count)
        return Cursor.jobs(String(middle))
    }

    func jobsQuery(_ params: Params) throws -> DashboardQueries.JobsPageQuery {
        let state = params.first("state")
        if let state, !["available", "running", "held"].contains(state) {
            throw BadRequest(message: "state: expected available, running or held, got '\(state)'")
        }
        let after = params.first("after")
        if after != nil && Cursor.jobs(after) == nil { throw BadRequest(message: "after: not a page cursor: '\(after!)'") }
        return DashboardQueries.JobsPageQuery(state: state, queue: params.first("queue"), destination: params.first("destination"),
                                              text: params.first("q"), before: Cursor.jobs(after), limit: 50)
    }

    func deadQuery(_ params: Params) throws -> DashboardQueries.DeadPageQuery {
        let reason = params.first("reason")
        if let reason, DeadLetterReason(rawValue: reason) == nil {
            throw BadRequest(message: "reason: expected one of \(DeadLetterReason.allCases.map(\.rawValue).joined(separator: ", ")), got '\(reason)'")
        }
        let after = params.first("after")
        if after != nil && Cursor.deadLetters(after) == nil { throw BadRequest(message: "after: not a page cursor: '\(after!)'") }
        let since = try params.timestamp("since"), until = try params.timestamp("until")
        if let since, let until, since >= until { throw BadRequest(message: "until: must be later than since") }
        return DashboardQueries.DeadPageQuery(reason: reason, destination: params.first("destination"), since: since, until: until,
                                              before: Cursor.deadLetters(after), limit: 50)
    }

    /// The dead letters a replay or purge means: the `ids` given, else the filter.
    func deadSelection(_ params: Params) throws -> DeadLettersTable.Filter {
        var filter = try deadQuery(params).filter
        let ids = try params.ids("ids")
        if !ids.isEmpty { filter.ids = ids }
        return filter
    }

    func rate(_ params: Params) throws -> Double? {
        guard let text = params.first("rate") else { return nil }
        guard let rate = Rate.parse(text) else { throw BadRequest(message: "rate: expected N/s, N/m or N/h such as 20/s, got '\(text)'") }
        return rate.perSecond
    }

    // MARK: - Actions

    func act(_ request: HTTPServer.Request, identity: DashboardAuth.Identity) -> HTTPServer.Response {
        let params = Params(request)
        let path = request.path
        do {
            let (summary, value) = try perform(path, params: params, identity: identity)
            log("dashboard: \(identity.label) \(summary)")
            if let back = params.first("return_to"), Self.isLocalPath(back) {
                let separator = back.contains("?") ? "&" : "?"
                return Self.redirect(back + separator + "notice=" + HTTPForm.percentEncode(summary))
            }
            return Self.json(200, value)
        } catch let error as BadRequest {
            return Self.error(request, 400, error.message)
        } catch let error as NotFound {
            return Self.error(request, 404, error.message)
        } catch {
            let failure = StoreError.from(error)
            log("dashboard: \(identity.label) \(path) failed: \(failure.message)")
            return Self.error(request, 500, "database: \(failure.message)")
        }
    }

    struct NotFound: Error { var message: String }

    /// Runs one action; returns the log line's "what" and the JSON answer.
    func perform(_ path: String, params: Params, identity: DashboardAuth.Identity) throws -> (String, AnyEncodable) {
        if let id = Self.id(path, prefix: "/api/jobs/", suffix: "/cancel") {
            let outcome = try store.jobsCancel(ids: [id]).first?.outcome ?? .notFound
            if outcome == .notFound { throw NotFound(message: "no waiting or running job \(id)") }
            return ("cancel job \(id): \(outcome.rawValue)", AnyEncodable(["id": "\(id)", "outcome": outcome.rawValue]))
        }
        if let id = Self.id(path, prefix: "/api/jobs/", suffix: "/retry") {
            let outcome = try store.jobsRetryNow(ids: [id]).first?.outcome ?? .notFound
            if outcome == .notFound { throw NotFound(message: "no waiting or running job \(id)") }
            return ("run job \(id) now: \(outcome.rawValue)", AnyEncodable(["id": "\(id)", "outcome": outcome.rawValue]))
        }
        switch path {
        case "/api/dead/replay":
            let filter = try deadSelection(params)
            let rate = try rate(params)
            if params.first("dry_run") == "1" || params.first("dry_run") == "true" {
                let counts = try store.deadReplayPreview(filter, cap: configuration.replayCap)
                let total = counts.reduce(0) { $0 + $1.count }
                return ("previewed a replay of \(total) dead letters",
                        AnyEncodable(ReplayPreviewJSON(total: total, byDestination: Dictionary(uniqueKeysWithValues: counts.map { ($0.destination, $0.count) }),
                                                       ratePerSecond: rate, capped: total >= configuration.replayCap)))
            }
            let result = try store.deadReplay(filter, ratePerSecond: rate, cap: configuration.replayCap)
            var line = "replayed \(result.replayed) dead letters"
            if let rate { line += " at \(rate)/s" }
            line += Self.describe(filter)
            if result.more { line += "; more remain (at most \(configuration.replayCap) per replay)" }
            return (line, AnyEncodable(result))
        case "/api/dead/purge":
            let ids = try params.ids("ids")
            if !ids.isEmpty {
                let purged = try store.deadPurge(ids: ids)
                return ("purged \(purged) dead letters (ids \(ids.map(String.init).joined(separator: ",")))", AnyEncodable(["purged": purged]))
            }
            guard let text = params.first("older_than") else { throw BadRequest(message: "give ids or older_than (a duration such as 7d)") }
            let duration: Duration
            do { duration = try DurationParser.parsePositive(text, field: "older_than") } catch { throw BadRequest(message: error.description) }
            let purged = try store.deadPurge(olderThanMilliseconds: Int64(duration.milliseconds))
            return ("purged \(purged) dead letters older than \(text)", AnyEncodable(["purged": purged]))
        case "/api/queues/pause", "/api/queues/resume":
            let paused = path.hasSuffix("/pause")
            guard let queue = params.first("queue") else { throw BadRequest(message: "queue: required") }
            guard QueueName.isValid(queue) else { throw BadRequest(message: "queue: must be \(QueueName.rule)") }
            let before = try store.queuePause(queue: queue, paused: paused)
            return ("\(paused ? "paused" : "resumed") queue \(queue) (was \(before ? "paused" : "running"))",
                    AnyEncodable(["queue": queue, "paused": paused ? "true" : "false", "was_paused": before ? "true" : "false"]))
        case "/api/destinations/pause", "/api/destinations/resume":
            let paused = path.hasSuffix("/pause")
            guard let destination = params.first("destination") else { throw BadRequest(message: "destination: required") }
            let stored: DestinationsTable.Policy
            do { stored = try store.destinationPause(destination: destination, paused: paused) } catch {
                let failure = StoreError.from(error)
                if case .badInput = failure.code { throw BadRequest(message: "destination: \(failure.message)") }
                throw error
            }
            return ("\(paused ? "paused" : "resumed") destination \(stored.destination)", AnyEncodable(stored))
        default:
            if path.hasPrefix("/api/breakers/"), let action = BreakersTable.ForceAction(rawValue: String(path.dropFirst("/api/breakers/".count))) {
                guard let destination = params.first("destination") else { throw BadRequest(message: "destination: required") }
                guard try store.breakerIsKnown(destination: destination) else {
                    throw NotFound(message: "no breaker, job or dead letter uses destination \(destination)")
                }
                let before = try store.breakerForce(destination: destination, action: action, actor: "dashboard " + identity.label)
                return ("breaker \(action.rawValue) \(destination) (was \(before))",
                        AnyEncodable(["destination": destination, "action": action.rawValue, "before": before]))
            }
            throw NotFound(message: "no such action: POST \(path)")
        }
    }

    static func describe(_ filter: DeadLettersTable.Filter) -> String {
        var parts: [String] = []
        if let ids = filter.ids { parts.append("ids " + ids.map(String.init).joined(separator: ",")) }
        if let reasons = filter.reasons { parts.append("reason " + reasons.joined(separator: ",")) }
        if let destinations = filter.destinations { parts.append("destination " + destinations.joined(separator: ",")) }
        if let since = filter.since { parts.append("since " + Timestamp.format(since)) }
        if let until = filter.until { parts.append("until " + Timestamp.format(until)) }
        return parts.isEmpty ? " (all waiting)" : " (" + parts.joined(separator: "; ") + ")"
    }

    /// A path on this dashboard (no scheme, host or `//`), safe to redirect to.
    static func isLocalPath(_ text: String) -> Bool {
        text.hasPrefix("/") && !text.hasPrefix("//") && !text.contains("\\") && !text.contains(where: { $0.isNewline || $0 == "\r" })
    }
}

struct JobsPageJSON: Encodable {
    var jobs: [JobRecord]
    var next: String?
    var windowExhausted: Bool
    enum CodingKeys: String, CodingKey { case jobs, next, windowExhausted = "window_exhausted" }
}

struct DeadPageJSON: Encodable {
    var deadLetters: [DeadLettersTable.Letter]
    var next: String?
    enum CodingKeys: String, CodingKey { case deadLetters = "dead_letters", next }
}

struct BreakersJSON: Encodable {
    var breakers: [DashboardQueries.Breaker]
    var events: [DashboardQueries.BreakerEvent]
}

struct ReplayPreviewJSON: Encodable {
    var total: Int
    var byDestination: [String: Int]
    var ratePerSecond: Double?
    var capped: Bool
    var dryRun = true
    enum CodingKeys: String, CodingKey {
        case total, byDestination = "by_destination", ratePerSecond = "rate_per_second", capped, dryRun = "dry_run"
    }
}

/// Any encodable value, for answers of several shapes.
struct AnyEncodable: Encodable {
    private let encodeValue: (Encoder) throws -> Void
    init<T: Encodable>(_ value: T) { encodeValue = value.encode }
    func encode(to encoder: Encoder) throws { try encodeValue(encoder) }
}

/// `/api/stats`: the overview snapshot, plus the chart's path data (so the page's live
/// update draws exactly what the server draws).
struct StatsJSON: Encodable {
    var overview: DashboardStore.Overview
    var succeeded: String
    var failed: String
    /// How long the database took to answer this snapshot.
    var snapshotMilliseconds: Double = 0

    init(_ overview: DashboardStore.Overview, minutes: Int = 60) {
        self.overview = overview
        let ok = SVGChart.perMinute(overview.perMinute.map { ($0.minute, $0.succeeded) }, minutes: minutes, now: overview.takenAt)
        let bad = SVGChart.perMinute(overview.perMinute.map { ($0.minute, $0.failed) }, minutes: minutes, now: overview.takenAt)
        let top = max(ok.max() ?? 0, bad.max() ?? 0, 1)
        succeeded = SVGChart.linePath(ok, maximum: top)
        failed = SVGChart.linePath(bad, maximum: top)
    }

    enum CodingKeys: String, CodingKey { case chart, snapshotMilliseconds = "snapshot_ms" }
    struct Chart: Encodable { var succeeded: String; var failed: String }

    func encode(to encoder: Encoder) throws {
        try overview.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Chart(succeeded: succeeded, failed: failed), forKey: .chart)
        try container.encode((snapshotMilliseconds * 10).rounded() / 10, forKey: .snapshotMilliseconds)
    }
}
