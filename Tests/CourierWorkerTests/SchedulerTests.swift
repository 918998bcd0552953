import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import CourierHTTPServer
import Foundation
import Postgres
import Testing

/// The scheduler service's passes, driven with an injected clock (`pass(now:)`, which `runOnce(now:)` calls with the database clock), so an
/// outage of an hour takes no time.
@Suite struct SchedulerTests {
    static func utc(_ text: String) -> Date { try! Date(text, strategy: Date.ISO8601FormatStyle()) }

    static func httpTemplate(_ path: String) -> String { TestRows.httpTemplate("https://hooks.example.com/" + path) }

    func scheduler(_ database: TestDatabase, _ logs: LogCapture, _ metrics: WorkerMetrics = WorkerMetrics()) -> Scheduler {
        Scheduler(configuration: Scheduler.Configuration(),
                  session: StoreSession(configuration: DatabaseConfiguration(connectionString: database.url), pause: { _ in }),
                  logger: Logger(level: .debug, sink: { logs.append($0) }), metrics: metrics)
    }

    func count(_ db: PostgresConnection, _ query: PostgresQuery) throws -> Int {
        try db.query(query).rows[0].decode(0, as: Int.self)
    }

    @Test func missedPoliciesAfterAFullStop() throws {
        try CourierTestDatabase.with { database, db in
            for policy in MissedRunPolicy.allCases {
                try TestRows(db).schedule("every-minute-\(policy.rawValue)", everySeconds: 60,
                                          template: Self.httpTemplate(policy.rawValue), missed: policy)
            }
            let logs = LogCapture()
            let metrics = WorkerMetrics()
            let scheduler = scheduler(database, logs, metrics)
            // First sight: each schedule gets its next run, nothing is enqueued.
            let first = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:00:30Z")))
            #expect(first.initialized == 3 && first.enqueued == 0)
            #expect(first.nextDue == Self.utc("2030-01-01T00:01:00Z"))

            // Every worker was down until 01:00:30: slots 00:01 ... 01:00 (60) are more than 10 s late.
            let stopEnd = Self.utc("2030-01-01T01:00:30Z")
            let pass = try #require(scheduler.pass(now: stopEnd))
            #expect(pass.enqueued == 61, "one: 1, all: 60, skip: 0")
            #expect(pass.missed == 60 + 59)
            func jobs(_ name: String) throws -> [String] {
                try db.query("""
                    select idempotency_key from courier.jobs where url = \("https://hooks.example.com/" + name) order by run_at
                    """).rows.map { try $0.decode(0, as: String.self) }
            }
            #expect(try jobs("skip").isEmpty)
            #expect(try jobs("one") == ["schedule:every-minute-one:2030-01-01T01:00:00Z"])
            let all = try jobs("all")
            #expect(all.count == 60 && Set(all).count == 60)
            #expect(all.first == "schedule:every-minute-all:2030-01-01T00:01:00Z")
            #expect(try count(db, "select count(*)::bigint from courier.jobs where run_at = \(Self.utc("2030-01-01T01:00:00Z"))::timestamptz") == 2)
            #expect(try count(db, "select count(*)::bigint from courier.schedules where next_run = \(Self.utc("2030-01-01T01:01:00Z"))::timestamptz") == 3)
            #expect(try count(db, "select count(*)::bigint from courier.schedule_runs") == 61)

            // The same pass again (another worker, the same moment) adds nothing.
            let again = try #require(scheduler.pass(now: stopEnd))
            #expect(again.enqueued == 0 && again.missed == 0)
            #expect(try count(db, "select count(*)::bigint from courier.jobs") == 61)

            let snapshot = metrics.snapshot()
            #expect(snapshot.scheduleLags.count == 61)
            #expect(snapshot.scheduleMissed == 119)
            let state = PrometheusText.WorkerState(workerID: "w", version: "v", concurrency: 1, inFlight: 0,
                                                   stopping: false, databaseReachable: true)
            let page = try MetricsExposition(parsing: PrometheusText.workerPage(metrics: snapshot, state: state, sampling: .init()))
            try page.checkConventions()
            #expect(page.value("courier_schedule_runs_enqueued_total") == 61)
            #expect(page.value("courier_schedule_runs_missed_total") == 119)
            #expect(page.value("courier_schedule_lag_seconds_count") == 61)
            // Replayed after the stop: only the two runs of slot 01:00 (one and all) are 30 s late, the rest over a minute.
            #expect(page.value("courier_schedule_lag_seconds_bucket", ["le": "60"]) == 2)
            #expect(page.value("courier_schedule_lag_seconds_bucket", ["le": "10"]) == 0)
            let lines = logs.all
            #expect(lines.filter { $0.contains("schedule run enqueued") && $0.contains("level=debug") }.count == 61)
            #expect(lines.contains { $0.contains("schedule slot missed") && $0.contains("level=info") && $0.contains("every-minute-skip") })
        }
    }

    @Test func onTimeSlotsRunPauseStopsAndResumeDoesNotCatchUp() throws {
        try CourierTestDatabase.with { database, db in
            try TestRows(db).schedule("tick", everySeconds: 1, template: Self.httpTemplate("tick"))
            let scheduler = scheduler(database, LogCapture())
            try #require(scheduler.pass(now: Self.utc("2030-01-01T00:00:00Z")))
            // Three slots due, at most 2 s late: all run, even with missed = skip's sibling default.
            let pass = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:00:03Z")))
            #expect(pass.enqueued == 3 && pass.missed == 0)

            #expect(try SchedulesTable.setPaused("tick", true, on: db))
            let paused = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:10:00Z")))
            #expect(paused.enqueued == 0 && paused.missed == 0)
            #expect(try SchedulesTable.setPaused("tick", false, on: db))
            let resumed = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:20:00Z")))
            #expect(resumed.enqueued == 0 && resumed.initialized == 1, "a resumed schedule starts from its next slot")
            let next = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:20:01Z")))
            #expect(next.enqueued == 1)
            #expect(try count(db, "select count(*)::bigint from courier.jobs") == 4)
        }
    }

    @Test func handlerJobsDeadlinesAndRunHistory() throws {
        try CourierTestDatabase.with { database, db in
            try TestRows(db).schedule("report", cron: "0 * * * *",
                                      template: #"{"kind": "report.build", "args": {"day": 1}, "queue": "reports", "within_ms": 600000}"#)
            let scheduler = scheduler(database, LogCapture())
            try #require(scheduler.pass(now: Self.utc("2030-01-01T09:59:00Z")))
            #expect(try #require(scheduler.pass(now: Self.utc("2030-01-01T10:00:01Z"))).enqueued == 1)
            let row = try db.query("""
                select kind, args::text, queue, run_at, deadline, idempotency_key from courier.jobs
                """).rows[0]
            #expect(try row.decode(0, as: String.self) == "report.build")
            #expect(try row.decode(1, as: String.self) == #"{"day": 1}"#)
            #expect(try row.decode(2, as: String.self) == "reports")
            #expect(try row.decode(3, as: Date.self) == Self.utc("2030-01-01T10:00:00Z"))
            #expect(try row.decode(4, as: Date.self) == Self.utc("2030-01-01T10:10:00Z"))
            #expect(try row.decode(5, as: String.self) == "schedule:report:2030-01-01T10:00:00Z")
            let runs = try SchedulesTable.runs(of: "report", limit: 10, on: db)
            #expect(runs.map(\.outcome) == ["available"])
            #expect(runs.map(\.slot) == [Self.utc("2030-01-01T10:00:00Z")])
        }
    }

    @Test func aScheduleThatCannotRunIsMarkedAndSkipped() throws {
        try CourierTestDatabase.with { database, db in
            // Added through SQL, which leaves the cron grammar to the workers.
            try db.query("select courier.schedule_add('typo', cron => '61 * * * *', template => '{\"url\": \"https://x.example.com/\"}')")
            try db.query("select courier.schedule_add('bad-url', every => interval '1 minute', template => '{\"url\": \"ftp://x\"}')")
            let logs = LogCapture()
            let scheduler = scheduler(database, logs)
            let pass = try #require(scheduler.pass(now: Self.utc("2030-01-01T00:00:00Z")))
            #expect(pass.failed == 2)
            let errors = try db.query("select name, last_error from courier.schedules order by name").rows.map {
                "\(try $0.decode(0, as: String.self)): \(try $0.decode(1, as: String.self))"
            }
            #expect(errors[0].hasPrefix("bad-url: url:"), "\(errors)")
            #expect(errors[1].hasPrefix("typo: cron: minute field: 61 is out of range"), "\(errors)")
            #expect(try #require(scheduler.pass(now: Self.utc("2030-01-01T00:05:00Z"))).failed == 0, "not retried every pass")
            #expect(logs.all.contains { $0.contains("schedule cannot run") && $0.contains("typo") })
            // An update clears the error; the next pass computes the next run.
            #expect(try SchedulesTable.update("typo", cron: "1 * * * *", on: db))
            #expect(try #require(scheduler.pass(now: Self.utc("2030-01-01T00:05:00Z"))).initialized == 1)
        }
    }
}
