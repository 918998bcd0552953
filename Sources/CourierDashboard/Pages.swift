import CourierCore
import CourierHTTPServer
import CourierStore
import Foundation

/// The server-rendered pages. Every value goes through ``HTML`` interpolation (escaped);
/// forms POST to the API with the CSRF token and a `return_to` path.
extension Dashboard {
    func page(_ request: HTTPServer.Request, identity: DashboardAuth.Identity) throws -> HTTPServer.Response {
        let params = Params(request)
        let path = request.path
        let csrf = identity.csrf
        let (title, body): (String, HTML)
        switch path {
        case "/": (title, body) = ("Overview", Pages.overview(try snapshot.get()))
        case "/queues": (title, body) = ("Queues", Pages.queues(try store.queueLoads(), settings: try store.queueSettings(),
                                                                 csrf: csrf, readOnly: configuration.readOnly))
        case "/jobs":
            if let text = params.first("q"), let id = Cursor.jobs(text), try store.job(id: id) != nil { return Self.redirect("/jobs/\(id)") }
            let query = try jobsQuery(params)
            (title, body) = ("Jobs", Pages.jobs(try store.jobsPage(query), query: query))
        case "/dead":
            let query = try deadQuery(params)
            (title, body) = ("Dead letters", Pages.dead(try store.deadPage(query), query: query, csrf: csrf, readOnly: configuration.readOnly))
        case "/dead/replay":
            let filter = try deadSelection(params)
            let counts = try store.deadReplayPreview(filter, cap: configuration.replayCap)
            (title, body) = ("Replay preview", Pages.replayPreview(counts, params: params, cap: configuration.replayCap, csrf: csrf,
                                                                    readOnly: configuration.readOnly, rate: try rate(params)))
        case "/breakers":
            (title, body) = ("Breakers", Pages.breakers(try store.breakers(), events: try store.breakerEvents(destination: nil),
                                                        csrf: csrf, readOnly: configuration.readOnly))
        case "/destinations":
            (title, body) = ("Destinations", Pages.destinations(try store.destinations(), traffic: try store.destinationTraffic(),
                                                                breakers: try store.breakers(), csrf: csrf, readOnly: configuration.readOnly))
        case "/workers": (title, body) = ("Workers", Pages.workers(try store.workers()))
        case "/schedules": (title, body) = ("Schedules", Pages.schedules(try store.schedules()))
        default:
            if let id = Self.id(path, prefix: "/jobs/") {
                guard let job = try store.job(id: id) else { return Self.error(request, 404, "no job \(id)") }
                (title, body) = ("Job \(id)", Pages.job(job, csrf: csrf, readOnly: configuration.readOnly))
            } else if let id = Self.id(path, prefix: "/dead/") {
                guard let letter = try store.deadLetter(id: id) else { return Self.error(request, 404, "no dead letter \(id)") }
                (title, body) = ("Dead letter \(id)", Pages.deadLetter(letter, csrf: csrf, readOnly: configuration.readOnly))
            } else {
                return Self.error(request, 404, "no page \(path)")
            }
        }
        var content = body
        if let notice = params.first("notice") { content = "<p class=\"notice\" id=\"notice\">\(notice)</p>" + content }
        return Self.html(200, Pages.layout(title: title, nav: path, csrf: csrf, readOnly: configuration.readOnly,
                                           loggedIn: identity.kind == .session, body: content))
    }
}

enum Pages {
    static let sections: [(path: String, name: String)] = [
        ("/", "Overview"), ("/queues", "Queues"), ("/jobs", "Jobs"), ("/dead", "Dead letters"), ("/breakers", "Breakers"),
        ("/destinations", "Destinations"), ("/workers", "Workers"), ("/schedules", "Schedules"),
    ]

    static func layout(title: String, nav: String, csrf: String, readOnly: Bool = false, loggedIn: Bool = false, body: HTML) -> HTML {
        let links: [HTML] = sections.map { section in
            let current = section.path == nav || (section.path != "/" && nav.hasPrefix(section.path))
            return current ? "<a href=\"\(section.path)\" aria-current=\"page\">\(section.name)</a>" : "<a href=\"\(section.path)\">\(section.name)</a>"
        }
        let badge: HTML = readOnly ? "<span class=\"badge\">read-only</span>" : ""
        let logout: HTML = loggedIn ? "<form method=\"post\" action=\"/logout\" class=\"inline\"><button>Log out</button></form>" : ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(title) · Courier</title>\
            <meta name="viewport" content="width=device-width, initial-scale=1">\
            <meta name="csrf-token" content="\(csrf)"><link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/app.css">\
            <script src="/assets/app.js" defer></script></head><body>\
            <header><strong>Courier</strong> <nav>\(links)</nav> \(badge) \(logout)</header><main>\(body)</main></body></html>
            """
    }

    /// The login form, with `error` (escaped) above it when there is one.
    static func login(error: String?) -> HTML {
        let message: HTML = error.map { "<p class=\"error\">\($0)</p>" } ?? ""
        return layout(title: "Log in", nav: "", csrf: "", body: """
            <h1>Log in</h1>\(message)<form method="post" action="/login"><label>Token \
            <input type="password" name="token" autocomplete="current-password" autofocus></label> <button>Log in</button></form>
            """)
    }

    static func count(_ c: CappedCount) -> String {
        c.capped ? "more than " + grouped(c.value) : grouped(c.value)
    }

    static func grouped(_ n: Int) -> String {
        let digits = String(n)
        var out = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return String(out.reversed())
    }

    static func time(_ date: Date?) -> String { date.map(Timestamp.format) ?? "–" }

    static func hidden(_ name: String, _ value: String?) -> HTML {
        guard let value else { return "" }
        return "<input type=\"hidden\" name=\"\(name)\" value=\"\(value)\">"
    }

    static func actionForm(_ action: String, label: String, csrf: String, returnTo: String, fields: HTML = "",
                           readOnly: Bool, id: String? = nil) -> HTML {
        let disabled: HTML = readOnly ? " disabled title=\"read-only dashboard\"" : ""
        let idAttribute: HTML = id.map { "id=\"\($0)\" " } ?? ""
        return """
            <form method="post" action="\(action)" class="inline">\(hidden("csrf", csrf))\(hidden("return_to", returnTo))\(fields)\
            <button \(idAttribute)\(disabled)>\(label)</button></form>
            """
    }

    // MARK: - Overview

    static func overview(_ o: DashboardStore.Overview) -> HTML {
        let minutes = 60
        let ok = SVGChart.perMinute(o.perMinute.map { ($0.minute, $0.succeeded) }, minutes: minutes, now: o.takenAt)
        let failed = SVGChart.perMinute(o.perMinute.map { ($0.minute, $0.failed) }, minutes: minutes, now: o.takenAt)
        let queueRows: [HTML] = o.queues.map {
            "<tr><td><a href=\"/jobs?queue=\(HTTPForm.percentEncode($0.queue))\">\($0.queue)</a></td><td>\(count($0.available))</td><td>\($0.running)</td></tr>"
        }
        let classes: [HTML] = o.attemptsByClass.sorted { $0.value > $1.value }.map { "<tr><td>\($0.key)</td><td>\(grouped($0.value))</td></tr>" }
        let reasons: [HTML] = o.deadLetters.sorted { $0.key < $1.key }.filter { $0.value.value > 0 }.map {
            "<tr><td><a href=\"/dead?reason=\($0.key)\">\($0.key)</a></td><td>\(count($0.value))</td></tr>"
        }
        let breakers: [HTML] = o.openBreakers.map { "<tr><td>\($0.destination)</td><td>\($0.state)</td><td>\(Int($0.seconds))s</td></tr>" }
        return """
            <h1>Overview</h1><p class="muted" id="live-status" data-poll="/api/stats">Snapshot at <span id="taken-at">\(time(o.takenAt))</span>; \
            about <span id="estimated-jobs">\(grouped(o.estimatedRows["jobs"] ?? 0))</span> jobs and \
            \(grouped(o.estimatedRows["dead_letters"] ?? 0)) dead letters in the tables (planner estimates).</p>
            <section class="cards"><div class="card"><h2>Live workers</h2><p class="big" id="live-workers">\(o.liveWorkers)</p></div>\
            <div class="card"><h2>Held by breakers</h2><p class="big" id="held">\(count(o.held))</p></div>\
            <div class="card"><h2>Open breakers</h2><p class="big" id="open-breakers">\(o.openBreakers.count)</p></div></section>
            <h2>Attempts per minute, last hour <span class="legend"><span class="ok">succeeded</span> <span class="failed">failed</span></span></h2>\
            \(SVGChart.throughput(succeeded: ok, failed: failed))
            <div class="columns"><section><h2>Depth per queue</h2><table id="depth"><thead><tr><th>Queue</th><th>Waiting</th><th>Running</th></tr></thead>\
            <tbody id="depth-rows">\(queueRows)</tbody></table></section>\
            <section><h2>Attempts by class, last hour</h2><table><tbody id="class-rows">\(classes)</tbody></table></section>\
            <section><h2>Dead letters by reason</h2><table><tbody id="reason-rows">\(reasons)</tbody></table></section>\
            <section><h2>Breakers not closed</h2><table><tbody id="breaker-rows">\(breakers)</tbody></table></section></div>
            """
    }

    // MARK: - Queues and destinations

    static func queues(_ loads: [DashboardQueries.QueueLoad], settings: [QueueSettingsTable.Settings], csrf: String, readOnly: Bool) -> HTML {
        let byName = Dictionary(settings.map { ($0.queue, $0) }, uniquingKeysWith: { a, _ in a })
        let names = Set(loads.map(\.queue)).union(byName.keys).sorted()
        let loadByName = Dictionary(loads.map { ($0.queue, $0) }, uniquingKeysWith: { a, _ in a })
        let rows: [HTML] = names.map { name in
            let load = loadByName[name]
            let s = byName[name]
            let backoff = s.map { [$0.backoff, $0.jitter].compactMap { $0 }.joined(separator: ", ") } ?? ""
            let paused = s?.paused ?? false
            let toggle = actionForm(paused ? "/api/queues/resume" : "/api/queues/pause", label: paused ? "Resume" : "Pause",
                                    csrf: csrf, returnTo: "/queues", fields: hidden("queue", name), readOnly: readOnly,
                                    id: (paused ? "resume-queue-" : "pause-queue-") + name)
            return """
                <tr><td><a href="/jobs?queue=\(HTTPForm.percentEncode(name))">\(name)</a></td><td>\(paused ? "paused" : "running")</td>\
                <td>\(load.map { count($0.available) } ?? "0")</td>\
                <td>\(load?.running ?? 0)</td><td>\(backoff.isEmpty ? "worker defaults" : backoff)</td><td class="actions">\(toggle)</td></tr>
                """
        }
        return """
            <h1>Queues</h1><table><thead><tr><th>Queue</th><th>State</th><th>Waiting</th><th>Running</th><th>Retry settings</th><th></th></tr></thead>\
            <tbody>\(rows)</tbody></table>
            """
    }

    static func destinations(_ policies: [DestinationsTable.Policy], traffic: [DestinationsTable.Traffic],
                             breakers: [DashboardQueries.Breaker], csrf: String, readOnly: Bool) -> HTML {
        let policyByName = Dictionary(policies.map { ($0.destination, $0) }, uniquingKeysWith: { a, _ in a })
        let trafficByName = Dictionary(traffic.map { ($0.destination, $0) }, uniquingKeysWith: { a, _ in a })
        let breakerByName = Dictionary(breakers.map { ($0.destination, $0) }, uniquingKeysWith: { a, _ in a })
        let names = Set(policyByName.keys).union(breakerByName.keys).sorted()
        func number(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value) }
        let rows: [HTML] = names.map { name in
            let breaker = breakerByName[name]
            let policy = policyByName[name]
            let paused = policy?.paused ?? false
            let limits = [policy?.maxInFlight.map { "at most \($0) in flight" },
                          policy?.ratePerSecond.map { "\(number($0))/s" + (policy?.burst.map { " (burst \($0))" } ?? "") },
                          policy?.slowStartMilliseconds.map { "slow start \(DurationParser.format(.milliseconds($0)))" },
                          policy?.retryBudgetPercent.map { "retries ≤ \(number($0))%" }].compactMap { $0 }.joined(separator: ", ")
            let toggle = actionForm(paused ? "/api/destinations/resume" : "/api/destinations/pause", label: paused ? "Resume" : "Pause",
                                    csrf: csrf, returnTo: "/destinations", fields: hidden("destination", name), readOnly: readOnly)
            return """
                <tr><td><a href="/jobs?destination=\(HTTPForm.percentEncode(name))">\(name)</a></td><td>\(paused ? "paused" : "running")</td>\
                <td>\(limits.isEmpty ? "none" : limits)</td><td>\(trafficByName[name].map { String($0.inFlight) } ?? "–")</td>\
                <td>\(breaker?.state ?? "closed")</td>\
                <td>\(breaker?.waiting.map(count) ?? "–")</td><td>\(policy?.signingSecret ?? "–")</td><td class="actions">\(toggle)</td></tr>
                """
        }
        return """
            <h1>Destinations</h1><p>In flight is counted for destinations with a limit or a pause; \
            <code>jobctl destination set DEST --max-in-flight N --rate N/s</code> sets limits, and \
            <code>jobctl destinations</code> shows recent rates and wait counters.</p>\
            <table><thead><tr><th>Destination</th><th>State</th><th>Limits</th><th>In flight</th><th>Breaker</th><th>Waiting</th>\
            <th>Signing secret (name)</th><th></th></tr></thead>\
            <tbody>\(rows)</tbody></table>
            """
    }

    // MARK: - Jobs

    static func filterForm(_ action: String, fields: [(name: String, label: String, value: String?)], extra: HTML = "") -> HTML {
        let inputs: [HTML] = fields.map { "<label>\($0.label) <input name=\"\($0.name)\" value=\"\($0.value ?? "")\"></label>" }
        return "<form method=\"get\" action=\"\(action)\" class=\"filters\">\(inputs)\(extra)<button>Filter</button></form>"
    }

    static func query(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in value.map { name + "=" + HTTPForm.percentEncode($0) } }.joined(separator: "&")
    }

    static func jobs(_ page: DashboardQueries.JobsPage, query q: DashboardQueries.JobsPageQuery) -> HTML {
        let rows: [HTML] = page.jobs.map { job in
            """
            <tr><td><a href="/jobs/\(job.id)">\(job.id)</a></td><td>\(job.heldSince == nil ? job.status.rawValue : "held")</td>\
            <td>\(job.queue)</td><td>\(job.destination)</td><td>\(job.method) \(job.url)</td><td>\(job.attempt)/\(job.maxAttempts)</td>\
            <td>\(time(job.runAt))</td></tr>
            """
        }
        let filters = filterForm("/jobs", fields: [("state", "State", q.state), ("queue", "Queue", q.queue),
                                                   ("destination", "Destination", q.destination), ("q", "Search", q.text)])
        var more: HTML = ""
        if let next = page.next {
            let link = query([("state", q.state), ("queue", q.queue), ("destination", q.destination), ("q", q.text), ("after", String(next))])
            let note: HTML = page.windowExhausted ? " (searched \(grouped(DashboardQueries.scanWindow)) jobs without filling the page)" : ""
            more = "<p><a id=\"next-page\" href=\"/jobs?\(link)\">Older jobs</a>\(note)</p>"
        }
        return """
            <h1>Jobs</h1><p class="muted">Waiting and running jobs, newest first. Search matches text in the URL, or an exact \
            idempotency or unique key; a job id opens that job.</p>\(filters)
            <table id="jobs"><thead><tr><th>ID</th><th>State</th><th>Queue</th><th>Destination</th><th>Request</th><th>Attempts</th>\
            <th>Runs at</th></tr></thead><tbody>\(rows)</tbody></table>\(page.jobs.isEmpty ? "<p>No jobs match.</p>" : "")\(more)
            """
    }

    static func headerRows(_ headers: [String: String]) -> [HTML] {
        headers.keys.sorted().map { "<tr><th>\($0)</th><td>\(headers[$0] ?? "")</td></tr>" }
    }

    static func timeline(_ attempts: [AttemptRecord]) -> HTML {
        let items: [HTML] = attempts.map { a in
            let status = a.status.map { " HTTP \($0)" } ?? ""
            let duration = a.durationMilliseconds.map { " in \($0) ms" } ?? ""
            return "<li><strong>#\(a.attempt) \(a.errorClass)\(status)</strong>\(duration) <span class=\"muted\">\(a.startedAt ?? "")</span><br>\(a.message)</li>"
        }
        return items.isEmpty ? "<p class=\"muted\">No attempts yet.</p>" : "<ol class=\"timeline\">\(items)</ol>"
    }

    static func job(_ job: JobRecord, csrf: String, readOnly: Bool) -> HTML {
        let back = "/jobs/\(job.id)"
        var actions: HTML = ""
        if job.status == .available || job.status == .running {
            actions = actionForm("/api/jobs/\(job.id)/cancel", label: "Cancel", csrf: csrf, returnTo: back, readOnly: readOnly, id: "cancel")
        }
        if job.status == .available {
            actions = actions + actionForm("/api/jobs/\(job.id)/retry", label: "Run now", csrf: csrf, returnTo: back, readOnly: readOnly, id: "run-now")
        }
        let state = job.heldSince == nil ? job.status.rawValue : "held by its breaker"
        var waits: HTML = ""
        if let refusal = job.refusal {
            waits = """
                <tr><th>Waits because</th><td id="job-refusal">no worker's configuration could run it: \(refusal.count) \
                refusal\(refusal.count == 1 ? "" : "s") since \(time(refusal.since)); the last: \(refusal.reason)</td></tr>
                """
        }
        return """
            <h1>Job \(job.id)</h1><p class="actions">\(actions)</p><table class="facts">\
            <tr><th>State</th><td id="job-state">\(state)\(job.deadReason.map { " (\($0))" } ?? "")</td></tr>\(waits)\
            <tr><th>Request</th><td>\(job.method) \(job.url)</td></tr><tr><th>Queue</th><td>\(job.queue)</td></tr>\
            <tr><th>Destination</th><td>\(job.destination)</td></tr>\
            <tr><th>Fairness key</th><td id="job-fairness-key">\(job.fairnessKey ?? "(default)")</td></tr><tr><th>Attempts</th><td>\(job.attempt) of \(job.maxAttempts)</td></tr>\
            <tr><th>Runs at</th><td>\(time(job.runAt))</td></tr><tr><th>Idempotency key</th><td>\(job.idempotencyKey ?? "(none)")</td></tr>\
            <tr><th>Signing secret</th><td>\(job.signingSecret ?? "–")</td></tr><tr><th>Enqueued</th><td>\(time(job.createdAt))</td></tr></table>
            <h2>Headers</h2><table class="facts" id="headers">\(headerRows(job.headers))</table><h2>Attempts</h2>\(timeline(job.errors))
            """
    }

    // MARK: - Dead letters

    static func deadFilterPairs(_ q: DashboardQueries.DeadPageQuery) -> [(String, String?)] {
        [("reason", q.reason), ("destination", q.destination), ("since", q.since.map(Timestamp.format)), ("until", q.until.map(Timestamp.format))]
    }

    static func dead(_ page: DashboardQueries.DeadPage, query q: DashboardQueries.DeadPageQuery, csrf: String, readOnly: Bool) -> HTML {
        let rows: [HTML] = page.letters.map { l in
            """
            <tr><td><input type="checkbox" name="ids" value="\(l.id)" form="selected"></td><td><a href="/dead/\(l.id)">\(l.id)</a></td>\
            <td>\(l.reason)</td><td>\(l.lastClass ?? "–")\(l.lastStatus.map { " \($0)" } ?? "")</td><td>\(l.destination)</td>\
            <td>\(l.method) \(l.url)</td><td>\(time(l.failedAt))</td></tr>
            """
        }
        let filters = filterForm("/dead", fields: [("reason", "Reason", q.reason), ("destination", "Destination", q.destination),
                                                   ("since", "Since", q.since.map(Timestamp.format)), ("until", "Until", q.until.map(Timestamp.format))])
        let filterFields: [HTML] = deadFilterPairs(q).map { hidden($0.0, $0.1) }
        var more: HTML = ""
        if let next = page.next {
            more = "<p><a id=\"next-page\" href=\"/dead?\(query(deadFilterPairs(q) + [("after", Cursor.format(failedAtMicros: next.failedAtMicros, id: next.id))]))\">Older dead letters</a></p>"
        }
        let disabled: HTML = readOnly ? " disabled" : ""
        return """
            <h1>Dead letters</h1><p class="muted">Waiting for a decision (not replayed), newest first. TIME is an RFC 3339 time, a date, \
            or an offset such as -12h.</p>\(filters)
            <form method="get" action="/dead/replay" class="inline" id="replay-filtered">\(filterFields)<label>Rate <input name="rate" placeholder="20/s" size="6"></label> \
            <button id="replay-filtered-button"\(disabled)>Replay all matching…</button></form> \
            <form method="get" action="/dead/replay" class="inline" id="selected"><button id="replay-selected"\(disabled)>Replay selected…</button></form> \
            \(actionForm("/api/dead/purge", label: "Purge selected", csrf: csrf, returnTo: "/dead", readOnly: readOnly, id: "purge-selected"))
            <table id="dead"><thead><tr><th></th><th>ID</th><th>Reason</th><th>Last error</th><th>Destination</th><th>Request</th><th>Failed</th></tr></thead>\
            <tbody>\(rows)</tbody></table>\(page.letters.isEmpty ? "<p>No dead letters match.</p>" : "")\(more)
            """
    }

    static func replayPreview(_ counts: [(destination: String, count: Int)], params: Params, cap: Int, csrf: String, readOnly: Bool,
                              rate: Double?) -> HTML {
        let total = counts.reduce(0) { $0 + $1.count }
        let rows: [HTML] = counts.map { "<tr><td>\($0.destination)</td><td>\(grouped($0.count))</td></tr>" }
        let keep = ["reason", "destination", "since", "until", "rate"].map { hidden($0, params.first($0)) }
            + params.all("ids").map { hidden("ids", $0) }
        var pace = ""
        if let rate, total > 1 { pace = String(format: ", paced over about %.0f s at %g/s", Double(total - 1) / rate, rate) }
        let capNote = total >= cap ? " (a replay takes at most \(grouped(cap)); run it again for the rest)" : ""
        return """
            <h1>Replay preview</h1><p id="preview-total">Dry run: \(grouped(total)) dead letters would be replayed\(pace)\(capNote); nothing has changed yet.</p>
            <table id="preview"><thead><tr><th>Destination</th><th>Dead letters</th></tr></thead><tbody>\(rows)</tbody></table>
            \(actionForm("/api/dead/replay", label: "Replay \(grouped(total))", csrf: csrf, returnTo: "/dead", fields: HTML(trusted: keep.map(\.text).joined()),
                         readOnly: readOnly || total == 0, id: "confirm-replay")) <a href="/dead">Cancel</a>
            """
    }

    static func deadLetter(_ l: DeadLettersTable.Letter, csrf: String, readOnly: Bool) -> HTML {
        let replay: HTML = "<form method=\"get\" action=\"/dead/replay\" class=\"inline\">\(hidden("ids", String(l.id)))<button id=\"replay\"\(readOnly ? " disabled" : "")>Replay…</button></form>"
        let purge = actionForm("/api/dead/purge", label: "Purge", csrf: csrf, returnTo: "/dead", fields: hidden("ids", String(l.id)), readOnly: readOnly, id: "purge")
        return """
            <h1>Dead letter \(l.id)</h1><p class="actions">\(replay) \(purge)</p><table class="facts">\
            <tr><th>Job</th><td><a href="/jobs/\(l.jobID)">\(l.jobID)</a></td></tr><tr><th>Reason</th><td>\(l.reason)</td></tr>\
            <tr><th>Request</th><td>\(l.method) \(l.url)</td></tr><tr><th>Queue</th><td>\(l.queue)</td></tr>\
            <tr><th>Destination</th><td>\(l.destination)</td></tr><tr><th>Attempts</th><td>\(l.attempt) of \(l.maxAttempts)</td></tr>\
            <tr><th>Failed</th><td>\(time(l.failedAt))</td></tr><tr><th>Replayed</th><td>\(time(l.replayedAt))</td></tr>\
            <tr><th>Signing secret</th><td>\(l.signingSecret ?? "–")</td></tr></table>
            <h2>Headers</h2><table class="facts" id="headers">\(headerRows(l.headers))</table>
            <h2>Body</h2><pre id="body">\(l.body ?? "")</pre><h2>Attempts</h2>\(timeline(l.errors))
            """
    }

    // MARK: - Breakers, workers, schedules

    static func breakers(_ breakers: [DashboardQueries.Breaker], events: [DashboardQueries.BreakerEvent], csrf: String, readOnly: Bool) -> HTML {
        let rows: [HTML] = breakers.map { b in
            let field = hidden("destination", b.destination)
            let buttons: [HTML] = BreakersTable.ForceAction.allCases.map {
                actionForm("/api/breakers/\($0.rawValue)", label: $0.rawValue.capitalized, csrf: csrf, returnTo: "/breakers", fields: field, readOnly: readOnly)
            }
            return """
                <tr><td>\(b.destination)</td><td class="state-\(b.state)">\(b.state)\(b.forced ? " (forced)" : "")</td><td>\(time(b.since))</td>\
                <td>\(b.consecutiveFailures)</td><td>\(time(b.nextProbeAt))</td><td>\(b.waiting.map(count) ?? "–")</td><td>\(b.openedCount)</td>\
                <td class="actions">\(buttons)</td></tr>
                """
        }
        let eventRows: [HTML] = events.map { "<li>\(time($0.at)) <strong>\($0.destination)</strong> \($0.from) → \($0.to): \($0.reason) \($0.worker.map { "(\($0))" } ?? "")</li>" }
        return """
            <h1>Breakers</h1><table id="breakers"><thead><tr><th>Destination</th><th>State</th><th>Since</th><th>Failures in a row</th>\
            <th>Next probe</th><th>Waiting jobs (not closed)</th><th>Times opened</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
            <h2>Latest transitions</h2><ol class="timeline">\(eventRows)</ol>
            """
    }

    static func workers(_ workers: [WorkersTable.LiveWorker]) -> HTML {
        let rows: [HTML] = workers.map { w in
            let jobs: [HTML] = w.jobs.prefix(50).map { "<a href=\"/jobs/\($0)\">\($0)</a> " }
            return """
                <tr><td>\(w.host):\(w.pid)</td><td>\(w.queues.joined(separator: ", "))</td><td>\(w.jobs.count)/\(w.concurrency)</td>\
                <td>\(jobs)\(w.jobs.count > 50 ? "…" : "")</td><td>\(time(w.heartbeatAt))</td><td>\(w.stopping ? "stopping" : "running")</td><td>\(w.version)</td></tr>
                """
        }
        return """
            <h1>Workers</h1><table id="workers"><thead><tr><th>Worker</th><th>Queues</th><th>Busy</th><th>Holds</th><th>Heartbeat</th>\
            <th>State</th><th>Version</th></tr></thead><tbody>\(rows)</tbody></table>\(workers.isEmpty ? "<p>No live workers.</p>" : "")
            """
    }

    static func schedules(_ schedules: [SchedulesTable.Schedule]) -> HTML {
        let rows: [HTML] = schedules.map { s in
            let rule = s.cron ?? s.everySeconds.map { "every " + DurationParser.format(.seconds($0)) } ?? ""
            return """
                <tr><td>\(s.name)</td><td>\(rule)</td><td>\(s.timezone)</td><td>\(s.missed.rawValue)</td><td>\(s.paused ? "paused" : "active")</td>\
                <td>\(time(s.nextRun))</td><td class="error">\(s.lastError ?? "")</td></tr>
                """
        }
        return """
            <h1>Schedules</h1><table id="schedules"><thead><tr><th>Name</th><th>Rule</th><th>Time zone</th><th>Missed runs</th><th>State</th>\
            <th>Next run</th><th>Last error</th></tr></thead><tbody>\(rows)</tbody></table>\(schedules.isEmpty ? "<p>No schedules.</p>" : "")
            """
    }
}
