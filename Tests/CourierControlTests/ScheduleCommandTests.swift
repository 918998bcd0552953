import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl schedule ...` and `jobctl schedules`, and the SQL functions behind them.
@Suite struct ScheduleCommandTests {
    @Test func addListShowUpdatePauseResumeRemove() throws {
        try ControlFixture.with { fixture throws in
            let added = fixture.run(["schedule", "add", "nightly", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin",
                                     "--url", "https://reports.example.com/run", "-H", "Content-Type: application/json",
                                     "--data", #"{"full": true}"#, "--queue", "reports", "--within", "1h", "--json"])
            #expect(added.status == 0, "\(added)")
            let view = try added.object()
            #expect(view["cron"] as? String == "0 2 * * *")
            #expect(view["timezone"] as? String == "Europe/Berlin")
            #expect(view["missed"] as? String == "one")
            let template = try #require(view["template"] as? [String: Any])
            #expect(template["url"] as? String == "https://reports.example.com/run")
            #expect(template["method"] as? String == "POST")
            #expect(template["queue"] as? String == "reports")
            #expect(template["body"] as? String == #"{"full": true}"#)
            #expect(template["within_ms"] as? Int == 3_600_000)
            #expect((template["headers"] as? [String: String])?["Content-Type"] == "application/json")
            let next = try #require(view["next_runs"] as? [String])
            #expect(next.count == 5)
            // 02:00 in Berlin is 00:00 or 01:00 UTC.
            #expect(next.allSatisfy { $0.contains("T00:00:00") || $0.contains("T01:00:00") }, "\(next)")

            let twice = fixture.run(["schedule", "add", "nightly", "--every", "1m", "--url", "https://x.example.com/"])
            #expect(twice.status == 2 && twice.err.contains("exists"), "\(twice)")

            _ = fixture.run(["schedule", "add", "poll", "--every", "5s", "--missed", "skip", "--kind", "orders.poll",
                             "--args", #"{"page": 1}"#, "--max-attempts", "2"])
            let list = fixture.run(["schedules", "--json"])
            #expect(list.status == 0, "\(list)")
            let rows = try list.array()
            #expect(rows.map { $0["name"] as? String } == ["nightly", "poll"])
            #expect(rows[1]["every_seconds"] as? Int == 5)
            #expect((rows[1]["template"] as? [String: Any])?["kind"] as? String == "orders.poll")
            let text = fixture.run(["schedules"])
            #expect(text.out.contains("every 5s") && text.out.contains("kind orders.poll"), "\(text.out)")

            // update changes what it names and keeps the rest.
            let updated = fixture.run(["schedule", "update", "nightly", "--method", "PUT", "--missed", "all", "--json"])
            #expect(updated.status == 0, "\(updated)")
            let after = try updated.object()
            let afterTemplate = try #require(after["template"] as? [String: Any])
            #expect(afterTemplate["method"] as? String == "PUT")
            #expect(afterTemplate["queue"] as? String == "reports", "unchanged fields stay")
            #expect(after["missed"] as? String == "all")
            #expect(after["cron"] as? String == "0 2 * * *")
            let switched = fixture.run(["schedule", "update", "nightly", "--every", "1h"])
            #expect(switched.status == 0, "\(switched)")
            #expect(try fixture.int("select count(*)::bigint from courier.schedules where name = 'nightly' and cron is null and every_seconds = 3600") == 1)
            let wrongKind = fixture.run(["schedule", "update", "poll", "--url", "https://x.example.com/"])
            #expect(wrongKind.status == 2 && wrongKind.err.contains("--url"), "\(wrongKind)")

            #expect(fixture.run(["schedule", "pause", "poll"]).status == 0)
            #expect(try fixture.int("select count(*)::bigint from courier.schedules where paused") == 1)
            let stats = fixture.run(["stats", "--json"])
            #expect((try stats.object()["schedules"] as? [String: Int]) == ["total": 2, "paused": 1, "failing": 0])
            #expect(fixture.run(["stats"]).out.contains("schedules: 2 (paused 1, failing 0)"))
            #expect(fixture.run(["schedule", "resume", "poll"]).status == 0)
            #expect(try fixture.int("select count(*)::bigint from courier.schedules where paused") == 0)
            #expect(fixture.run(["schedule", "remove", "poll"]).status == 0)
            #expect(fixture.run(["schedule", "remove", "poll"]).status == 3)
            #expect(fixture.run(["schedule", "show", "poll"]).status == 3)
            #expect(fixture.run(["schedule", "pause", "ghost"]).status == 3)
        }
    }

    static let badInputs: [([String], String)] = [
        (["--cron", "61 * * * *"], "--cron: minute field"),
        (["--cron", "* * *"], "--cron: expected 5 fields"),
        (["--cron", "*/0 * * * *"], "--cron: minute field: step must be at least 1"),
        (["--cron", "0 0 31 2 *"], "--cron: day-of-month field"),
        (["--cron", "@reboot"], "--cron: unknown macro"),
        (["--cron", "0 * * * *", "--timezone", "Mars/Base"], "--timezone: unknown time zone"),
        (["--every", "500ms"], "--every: must be at least 1s"),
        (["--every", "soon"], "--every"),
        (["--every", "1m", "--timezone", "UTC"], "--timezone: only applies to --cron"),
        (["--cron", "0 * * * *", "--every", "1m"], "--every"),
        ([String](), "--cron"),
        (["--every", "1m", "--missed", "some"], "--missed"),
        (["--every", "1m", "--run-at", "now"], "--run-at"),
        (["--every", "1m", "--idempotency-key", "k"], "--idempotency-key"),
        (["--every", "1m", "--url", "ftp://x.example.com/"], "--url"),
        (["--every", "1m", "--kind", "HTTP"], "--kind"),
        (["--every", "1m", "--kind", "a.b", "--args", "[1]"], "--args"),
        (["--every", "1m", "--kind", "a.b", "--method", "GET"], "--method"),
        (["--every", "1m", "--url", "https://x.example.com/", "--priority", "40000"], "--priority"),
    ]

    /// Each bad flag value exits 2 naming the flag, and adds nothing (one database for all cases).
    @Test func badInputIsRefusedNamingTheFlag() throws {
        try ControlFixture.with { fixture throws in
            for (arguments, field) in Self.badInputs {
                var args = ["schedule", "add", "s1"] + arguments
                if !arguments.contains("--url") && !arguments.contains("--kind") { args += ["--url", "https://x.example.com/"] }
                let result = fixture.run(args)
                #expect(result.status == 2, "\(arguments): \(result)")
                #expect(result.err.contains(field), "\(arguments): \(result)")
            }
            #expect(try fixture.int("select count(*)::bigint from courier.schedules") == 0, "nothing was added")
        }
    }

    @Test func badNameIsRefused() throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(["schedule", "add", "no spaces", "--every", "1m", "--url", "https://x.example.com/"])
            #expect(result.status == 2 && result.err.contains("NAME"), "\(result)")
        }
    }

    @Test func sqlFunctionsAddUpdatePauseResumeRemove() throws {
        try ControlFixture.with { fixture throws in
            let db = fixture.db
            try db.query("""
                select courier.schedule_add('sql-made', cron => '*/5 * * * *', template => '{"url": "https://x.example.com/a"}')
                """)
            #expect(try db.query("select courier.schedule_update('sql-made', every => interval '30 seconds')").rows[0].decode(0, as: Bool.self))
            #expect(try fixture.int("select every_seconds from courier.schedules where name = 'sql-made' and cron is null") == 30)
            #expect(try db.query("select courier.schedule_update('nobody', missed => 'all')").rows[0].decode(0, as: Bool.self) == false)
            #expect(try db.query("select courier.schedule_pause('sql-made')").rows[0].decode(0, as: Bool.self))
            #expect(try db.query("select courier.schedule_resume('sql-made')").rows[0].decode(0, as: Bool.self))
            #expect(try db.query("select courier.schedule_pause('nobody')").rows[0].decode(0, as: Bool.self) == false)
            for (sql, column) in [
                ("select courier.schedule_add('x y', every => interval '1 minute', template => '{\"url\": \"https://x.example.com/\"}')", "name"),
                ("select courier.schedule_add('x', template => '{\"url\": \"https://x.example.com/\"}')", "cron"),
                ("select courier.schedule_add('x', every => interval '0.5 seconds', template => '{\"url\": \"https://x.example.com/\"}')", "every"),
                ("select courier.schedule_add('x', every => interval '1 minute', missed => 'most', template => '{\"url\": \"https://x.example.com/\"}')", "missed"),
                ("select courier.schedule_add('x', every => interval '1 minute', template => '{\"method\": \"GET\"}')", "template"),
                ("select courier.schedule_add('x', every => interval '1 minute', template => '{\"url\": \"https://x.example.com/\", \"run_at\": \"2024-01-01T00:00:00Z\"}')", "template"),
                ("select courier.schedule_add('sql-made', every => interval '1 minute', template => '{\"url\": \"https://x.example.com/\"}')", "name"),
            ] {
                do {
                    try db.query(PostgresQuery(unsafeSQL: sql))
                    Issue.record("accepted: \(sql)")
                } catch let error as PostgresError {
                    #expect(error.sqlState == "22023", "\(sql): \(error)")
                    #expect(error.message.contains(column) || error.columnName == column, "\(sql): \(error)")
                }
            }
            #expect(try db.query("select courier.schedule_remove('sql-made')").rows[0].decode(0, as: Bool.self))
            #expect(try fixture.int("select count(*)::bigint from courier.schedules") == 0)
        }
    }

    @Test func applyMakesTheSetEqualToTheFile() throws {
        try ControlFixture.with { fixture throws in
            _ = fixture.run(["schedule", "add", "old", "--every", "1m", "--url", "https://x.example.com/old"])
            _ = fixture.run(["schedule", "add", "keep", "--every", "1m", "--url", "https://x.example.com/keep"])
            _ = fixture.run(["schedule", "pause", "keep"])
            let file = try TemporaryFile("""
                [
                  {"name": "keep", "every": "1m", "job": {"url": "https://x.example.com/keep"}},
                  {"name": "report", "cron": "0 6 * * MON-FRI", "timezone": "America/New_York", "missed": "skip",
                   "job": {"url": "https://x.example.com/report", "method": "GET", "within_ms": 60000}},
                  {"name": "cleanup", "every": "1h", "paused": true, "job": {"kind": "cleanup.run", "args": {"days": 30}}}
                ]
                """, suffix: ".json")
            let dry = fixture.run(["schedule", "apply", file.path, "--dry-run"])
            #expect(dry.status == 0, "\(dry)")
            #expect(dry.out.contains("would add 2, update 0, remove 1, keep 1"), "\(dry.out)")
            #expect(try fixture.int("select count(*)::bigint from courier.schedules") == 2, "a dry run changes nothing")

            let applied = fixture.run(["schedule", "apply", file.path])
            #expect(applied.status == 0, "\(applied)")
            #expect(applied.out.contains("add report") && applied.out.contains("remove old"), "\(applied.out)")
            let names = try fixture.db.query("select name, paused from courier.schedules order by name").rows.map {
                "\(try $0.decode(0, as: String.self)):\(try $0.decode(1, as: Bool.self))"
            }
            #expect(names == ["cleanup:true", "keep:true", "report:false"], "paused is kept when the file leaves it out")
            let again = fixture.run(["schedule", "apply", file.path])
            #expect(again.out.contains("add 0, update 0, remove 0, keep 3"), "applying again changes nothing: \(again.out)")

            let bad = try TemporaryFile("""
                {"name": "a", "every": "1m", "job": {"url": "https://x.example.com/"}}
                {"name": "b", "cron": "61 * * * *", "job": {"url": "https://x.example.com/"}}
                """)
            let refused = fixture.run(["schedule", "apply", bad.path])
            #expect(refused.status == 2, "\(refused)")
            #expect(refused.err.contains("line 2") && refused.err.contains("cron: minute field"), "\(refused.err)")
            #expect(try fixture.int("select count(*)::bigint from courier.schedules") == 3, "nothing was changed")
            let badJob = try TemporaryFile(#"{"name": "a", "every": "1m", "job": {"url": "https://x.example.com/", "priority": "high"}}"#)
            let refusedJob = fixture.run(["schedule", "apply", badJob.path])
            #expect(refusedJob.status == 2 && refusedJob.err.contains("job.priority"), "\(refusedJob.err)")
        }
    }
}
