import CourierControl
import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Sensitive header values never leave jobctl: not in `show`, `list`, `cancel`,
/// `dead list/show/replay`, `schedule add/update/show` and `schedules` (text and JSON), and
/// not in error messages; nor does the database password, however the URL is mistyped.
@Suite struct RedactionOutputTests {
    /// Header name to a value that must never be printed. Every value starts `tok-`.
    static let sensitive: [(String, String)] = [
        ("Authorization", "Bearer tok-AUTH-1111"),
        ("Cookie", "sid=tok-COOKIE-2222"),
        ("Proxy-Authorization", "Basic tok-PROXY-3333"),
        ("X-Api-Key", "tok-APIKEY-4444"),
        ("X-Session-Token", "tok-TOKEN-5555"),
        ("X-Client-Secret", "tok-SECRET-6666"),
        ("X-DB-Password", "tok-PASS-7777"),
        ("Set-Cookie", "tok-SETCOOKIE-8888"),
        ("Webhook-Signature", "v1,tok-SIGNATURE-9999"),
    ]
    /// A header that is shown, to prove the outputs print headers at all.
    static let visible = ("X-Trace", "visible-trace-1")

    /// Runs jobctl in-process against `url` (the shared runner, through `DATABASE_URL`).
    static func jobctl(_ arguments: [String], url: String, stdin: String = "") -> JobctlOutcome {
        CourierControlTests.jobctl(arguments, databaseURL: nil, stdin: Data(stdin.utf8), environment: ["DATABASE_URL": url])
    }

    /// Fails the test if any secret value (or a distinctive part of one) appears in `text`.
    static func expectNoSecret(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!text.contains("tok-"), "\(what) leaks a sensitive value:\n\(text)", sourceLocation: sourceLocation)
        for (_, value) in sensitive {
            #expect(!text.contains(value), "\(what) leaks \(value)", sourceLocation: sourceLocation)
        }
    }

    static func enqueueArguments(_ path: String) -> [String] {
        var arguments = ["enqueue", "--url", "https://hooks.example/\(path)", "--data", #"{"a":1}"#]
        for (name, value) in sensitive + [visible] { arguments += ["--header", "\(name): \(value)"] }
        return arguments
    }

    @Test func showAndListOfAWaitingJobRedactEverySensitiveHeader() throws {
        try CourierTestDatabase.with { database, connection in
            let enqueued = Self.jobctl(Self.enqueueArguments("waiting"), url: database.url)
            #expect(enqueued.status == 0, "\(enqueued.err)")
            let id = enqueued.out.trimmingCharacters(in: .whitespacesAndNewlines)
            let stored = try connection.query("select headers::text from courier.jobs where id = \(Int64(id) ?? -1)").rows
            let storedText = try stored.first?.decode(0, as: String.self)
            #expect(storedText?.contains("tok-AUTH-1111") == true, "the job keeps its real header values for the worker to send")

            for arguments in [["show", id], ["show", id, "--json"], ["list"], ["list", "--json"]] {
                let result = Self.jobctl(arguments, url: database.url)
                #expect(result.status == 0, "\(arguments): \(result.err)")
                Self.expectNoSecret(result.out + result.err, "jobctl \(arguments.joined(separator: " "))")
            }
            let text = Self.jobctl(["show", id], url: database.url).out
            for (name, _) in Self.sensitive { #expect(text.contains("\(name): \(Redaction.placeholder)"), "show redacts \(name)") }
            #expect(text.contains("X-Trace: visible-trace-1"))
            let json = Self.jobctl(["show", id, "--json"], url: database.url).out
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let headers = try #require(object["headers"] as? [String: String])
            for (name, _) in Self.sensitive { #expect(headers[name] == Redaction.placeholder, "show --json redacts \(name)") }
            #expect(headers["X-Trace"] == "visible-trace-1")
        }
    }

    @Test func deadLetterViewsRedactEverySensitiveHeader() throws {
        try CourierTestDatabase.with { database, _ in
            let enqueued = Self.jobctl(Self.enqueueArguments("dead"), url: database.url)
            let id = enqueued.out.trimmingCharacters(in: .whitespacesAndNewlines)
            let cancelled = Self.jobctl(["cancel", id], url: database.url)
            #expect(cancelled.status == 0, "\(cancelled.err)")
            Self.expectNoSecret(cancelled.out + cancelled.err, "jobctl cancel")

            let list = Self.jobctl(["dead", "list", "--json"], url: database.url)
            #expect(list.status == 0, "\(list.err)")
            let letters = try #require(try JSONSerialization.jsonObject(with: Data(list.out.utf8)) as? [[String: Any]])
            let letterID = try #require(letters.first?["id"] as? Int)
            let runs: [[String]] = [
                ["show", id], ["show", id, "--json"],
                ["dead", "list"], ["dead", "list", "--json"],
                ["dead", "show", String(letterID)], ["dead", "show", String(letterID), "--json"],
                ["dead", "replay", String(letterID), "--dry-run"], ["dead", "replay", String(letterID), "--dry-run", "--json"],
            ]
            for arguments in runs {
                let result = Self.jobctl(arguments, url: database.url)
                #expect(result.status == 0, "\(arguments): \(result.err)")
                Self.expectNoSecret(result.out + result.err, "jobctl \(arguments.joined(separator: " "))")
            }
            let shown = Self.jobctl(["dead", "show", String(letterID)], url: database.url).out
            #expect(shown.contains("Authorization: \(Redaction.placeholder)"))
            #expect(shown.contains("X-Trace: visible-trace-1"))
            let json = Self.jobctl(["dead", "show", String(letterID), "--json"], url: database.url).out
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let headers = try #require(object["headers"] as? [String: String])
            for (name, _) in Self.sensitive { #expect(headers[name] == Redaction.placeholder, "dead show --json redacts \(name)") }
            let job = Self.jobctl(["show", id, "--json"], url: database.url).out
            #expect(job.contains(Redaction.placeholder) && job.contains("visible-trace-1"), "the dead job's own view shows redacted headers")

            // Replayed for real, the new job still carries the real values, shown redacted.
            let replay = Self.jobctl(["dead", "replay", String(letterID), "--json"], url: database.url)
            #expect(replay.status == 0, "\(replay.err)")
            Self.expectNoSecret(replay.out + replay.err, "jobctl dead replay")
            let waiting = Self.jobctl(["list", "--json"], url: database.url)
            Self.expectNoSecret(waiting.out, "jobctl list after replay")
        }
    }

    @Test func usageErrorsNeverEchoAHeaderValue() throws {
        try CourierTestDatabase.with { database, _ in
            let badHeaders = [
                "Authorization Bearer tok-NOCOLON-1",  // forgot the colon
                "Bearer tok-NONAME-2",                 // forgot the name
                "X Api Key: tok-BADNAME-3",            // a name with spaces
                "Authorization: tok-LINEBREAK-4\r\nX-Other: y",
                ": tok-EMPTYNAME-5",
            ]
            for header in badHeaders {
                let result = Self.jobctl(["enqueue", "--url", "https://e.example/x", "--header", header], url: database.url)
                #expect(result.status == 2, "\(header.debugDescription) is bad usage")
                #expect(result.err.contains("--header") || result.err.contains("header"), "the error names the flag: \(result.err)")
                Self.expectNoSecret(result.out + result.err, "the usage error for \(header.debugDescription)")
            }
            // The same header given twice, and a bad flag next to a good secret header.
            let twice = Self.jobctl(["enqueue", "--url", "https://e.example/x", "--header", "Authorization: tok-TWICE-6",
                                     "--header", "authorization: tok-TWICE-7"], url: database.url)
            #expect(twice.status == 2)
            Self.expectNoSecret(twice.out + twice.err, "the duplicate-header error")
            let other = Self.jobctl(["enqueue", "--url", "https://e.example/x", "--header", "Authorization: tok-OTHER-8",
                                     "--priority", "high"], url: database.url)
            #expect(other.status == 2 && other.err.contains("--priority"))
            Self.expectNoSecret(other.out + other.err, "an unrelated usage error")
        }
    }

    @Test func ndjsonErrorsNeverEchoAHeaderValue() throws {
        try CourierTestDatabase.with { database, _ in
            let lines = [
                #"{"url": "https://e.example/a", "headers": {"Authorization": "Bearer tok-ND-1"}, "priority": "x"}"#,
                #"{"url": "https://e.example/a", "headers": {"Authorization": ["tok-ND-2"]}}"#,
                #"{"url": "https://e.example/a", "headers": {"Authorization": "tok-ND-3\nX: y"}}"#,
                #"{"url": "https://e.example/a", "headers": {"Bad Name": "tok-ND-4"}}"#,
                #"{"url": "https://e.example/a", "headers": {"Authorization": "tok-ND-5"}, "oops": 1}"#,
                #"{"url": "https://e.example/a", "headers": {"Authorization": "tok-ND-6"}"#,
            ]
            for line in lines {
                let result = Self.jobctl(["enqueue", "--ndjson", "-"], url: database.url, stdin: line + "\n")
                #expect(result.status == 2, "\(line) is bad input")
                #expect(result.err.contains("line 1"), "the error names the line: \(result.err)")
                Self.expectNoSecret(result.out + result.err, "the NDJSON error for \(line)")
            }
        }
    }

    @Test func connectionErrorsNeverEchoTheDatabasePassword() throws {
        // Nothing listens on port 1: the connection fails, and the message must not carry the password.
        let result = Self.jobctl(["list"], url: "postgresql://courier:tok-DBPASS-1@127.0.0.1:1/none?connect_timeout=2")
        #expect(result.status == 1)
        #expect(result.err.contains("cannot connect"))
        Self.expectNoSecret(result.out + result.err, "the connection error")
    }

    /// Issue 43 item 11: schedules printed their template as stored: literal Authorization
    /// (and every other sensitive) header values and `api_key=` query values, in text and
    /// JSON. They are redacted by the rules jobs are shown with; the rest is shown.
    @Test func scheduleViewsRedactEverySensitiveHeaderAndQueryValue() throws {
        try CourierTestDatabase.with { database, connection in
            var add = ["schedule", "add", "nightly", "--every", "1h", "--url", "https://hooks.example/s?api_key=tok-QUERY-1&page=2", "--data", #"{"a":1}"#]
            for (name, value) in Self.sensitive + [Self.visible] { add += ["--header", "\(name): \(value)"] }
            for arguments in [add, add.map { $0 == "nightly" ? "nightly-json" : $0 } + ["--json"]] {
                let result = Self.jobctl(arguments, url: database.url)
                #expect(result.status == 0, "\(result.err)")
                Self.expectNoSecret(result.out + result.err, "jobctl \(arguments.prefix(3).joined(separator: " "))")
            }
            let stored = try connection.query("select template::text from courier.schedules where name = 'nightly'").rows[0].decode(0, as: String.self)
            #expect(stored.contains("tok-AUTH-1111") && stored.contains("tok-QUERY-1"), "the schedule keeps the real values for its jobs")

            let runs: [[String]] = [
                ["schedule", "show", "nightly"], ["schedule", "show", "nightly", "--json"], ["schedules"], ["schedules", "--json"],
                ["schedule", "update", "nightly", "--priority", "3"], ["schedule", "update", "nightly", "--priority", "4", "--json"],
            ]
            for arguments in runs {
                let result = Self.jobctl(arguments, url: database.url)
                #expect(result.status == 0, "\(arguments): \(result.err)")
                Self.expectNoSecret(result.out + result.err, "jobctl \(arguments.joined(separator: " "))")
            }
            let text = Self.jobctl(["schedule", "show", "nightly"], url: database.url).out
            #expect(text.contains("https://hooks.example/s?api_key=\(Redaction.placeholder)&page=2"), "\(text)")
            #expect(text.contains(#""Authorization":"\#(Redaction.placeholder)""#) && text.contains(#""X-Trace":"visible-trace-1""#), "\(text)")
            let json = Self.jobctl(["schedule", "show", "nightly", "--json"], url: database.url).out
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let template = try #require(object["template"] as? [String: Any])
            #expect(template["url"] as? String == "https://hooks.example/s?api_key=\(Redaction.placeholder)&page=2")
            let headers = try #require(template["headers"] as? [String: Any])
            for (name, _) in Self.sensitive { #expect(headers[name] as? String == Redaction.placeholder, "schedule show --json redacts \(name)") }
            #expect(headers["X-Trace"] as? String == "visible-trace-1")
            #expect(template["body"] as? String == #"{"a":1}"#)
            let list = Self.jobctl(["schedules"], url: database.url).out
            #expect(list.contains("POST https://hooks.example/s?api_key=\(Redaction.placeholder)&page=2"), "\(list)")

            // A schedule added through SQL, with a secret reference: the reference is a name, shown.
            try connection.simpleQuery("""
                select courier.schedule_add('sql-made', every => interval '1 hour', template => '{"url": "https://hooks.example/q?token=tok-QUERY-9",
                    "headers": {"Authorization": "Basic tok-SQL-1", "X-Partner": {"secret": "partner-token"}}}')
                """)
            for arguments in [["schedule", "show", "sql-made"], ["schedule", "show", "sql-made", "--json"], ["schedules", "--json"]] {
                let result = Self.jobctl(arguments, url: database.url)
                #expect(result.status == 0, "\(arguments): \(result.err)")
                Self.expectNoSecret(result.out + result.err, "jobctl \(arguments.joined(separator: " "))")
            }
            let made = Self.jobctl(["schedule", "show", "sql-made", "--json"], url: database.url).out
            let madeObject = try #require(try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])
            let madeHeaders = try #require((madeObject["template"] as? [String: Any])?["headers"] as? [String: Any])
            #expect((madeHeaders["X-Partner"] as? [String: String])?["secret"] == "partner-token")
            #expect(madeHeaders["Authorization"] as? String == Redaction.placeholder)
        }
    }

    /// A schedule the database refuses: PostgreSQL's detail showed the whole row, template
    /// and all. jobctl now refuses an over-long cron expression itself, naming `--cron`
    /// (CronExpression.maximumLength); a row the table still refuses (here through the store,
    /// past the parser) gives an error that names the constraint and withholds the row.
    @Test func scheduleConstraintErrorsNeverEchoTheTemplate() throws {
        try CourierTestDatabase.with { database, db in
            let cron = Array(repeating: "0", count: 120).joined(separator: ",") + " * * * *"
            let arguments = ["schedule", "add", "long", "--cron", cron, "--url", "https://hooks.example/s?api_key=tok-QUERY-2",
                             "--header", "Authorization: Bearer tok-AUTH-2"]
            for extra in [[], ["--json"]] {
                let result = Self.jobctl(arguments + extra, url: database.url)
                #expect(result.status == 2, "\(result.out) \(result.err)")
                #expect(result.err.contains("--cron: at most 200 characters"), "\(result.err)")
                Self.expectNoSecret(result.out + result.err, "the refusal")
            }
            let added = Self.jobctl(["schedule", "add", "short", "--every", "1h", "--url", "https://hooks.example/s?api_key=tok-QUERY-3",
                                     "--header", "Authorization: Bearer tok-AUTH-3"], url: database.url)
            #expect(added.status == 0, "\(added.err)")
            let update = Self.jobctl(["schedule", "update", "short", "--cron", cron], url: database.url)
            #expect(update.status == 2 && update.err.contains("--cron: at most 200 characters"), "\(update.err)")
            Self.expectNoSecret(update.out + update.err, "the refusal of an update")

            // The table's own check, reached past the parser: the error jobctl would print.
            let template = #"{"url": "https://hooks.example/s?api_key=tok-QUERY-4", "method": "POST", "#
                + #""headers": {"Authorization": "Bearer tok-AUTH-4"}}"#
            do {
                try SchedulesTable.add(.init(name: "past-the-parser", cron: cron, template: template), on: db)
                Issue.record("the table took a \(cron.count)-character cron expression")
            } catch let error as PostgresError {
                #expect("\(error)".contains("schedules_cron_check"), "\(error)")
                Self.expectNoSecret("\(error)", "the constraint error")
            }
        }
    }

    /// Issue 43 item 11: a mistyped `DATABASE_URL` (or `--database-url`) had its password
    /// echoed by jobctl, in libpq's parse errors and in the "neither a URI nor conninfo"
    /// message. Both forms, as flag and as variable.
    @Test func malformedDatabaseURLsNeverEchoThePassword() {
        let urls = [
            "postgresql://courier:tok-DBPASS-2@[::1/none",
            "postgresql://courier:tok%zzDBPASS-3@127.0.0.1/none",
            "postgresql://courier@127.0.0.1/none?password=tok-DBPASS-4%zz",
            "postgresql://courier:tok-DBPASS-5@127.0.0.1/none?x&y",
            "host=127.0.0.1 password tok-DBPASS-6",
            "host=127.0.0.1 password='tok-DBPASS-7",
            "postgresq://courier:tok-DBPASS-8@127.0.0.1/none",
        ]
        for url in urls {
            let viaVariable = Self.jobctl(["list"], url: url)
            let viaFlag = CourierControlTests.jobctl(["list", "--database-url", url], databaseURL: nil, stdin: Data(), environment: [:])
            for result in [viaVariable, viaFlag] {
                #expect(result.status == 1 || result.status == 2, "\(url): \(result.err)")
                #expect(result.err.contains("connection string") || result.err.contains("--database-url"), "\(url): \(result.err)")
                Self.expectNoSecret(result.out + result.err, "the error for \(url)")
            }
        }
    }
}
