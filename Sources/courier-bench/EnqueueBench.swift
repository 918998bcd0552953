import CourierStore
import Foundation
import Postgres

/// Enqueue throughput (issue 2): 100k NDJSON lines through `jobctl enqueue --ndjson`
/// (timed end to end: process start to exit), the same file in process with
/// `JobsTable.enqueueMany` (parse and COPY timed apart), and SQL `courier.enqueue`
/// called in a loop on one connection, each call its own autocommit transaction.
struct EnqueueBench {
    let context: BenchContext
    let lines: Int
    let sqlCalls: Int

    /// A realistic webhook line: POST with a small JSON body; jobs are never run.
    static func line(_ index: Int) -> String {
        #"{"url":"http://127.0.0.1:18080/hooks/\#(index % 100)","body":{"event":"order.paid","order":\#(index)},"queue":"enq"}"#
    }

    /// A line using most fields: a PUT with a secret header and two literal ones, a JSON
    /// body with a non-ASCII escape, a schedule, a deadline, retry and timeout settings.
    static func richLine(_ index: Int) -> String {
        #"{"url":"https://api\#(index % 50).example.com/v2/hooks/\#(index)?x=1","method":"put","#
            + #""headers":{"Authorization":{"secret":"TOKEN"},"Content-Type":"application/json","X-Request-Id":"r-\#(index)"},"#
            + #""body":{"event":"order.paid","order":\#(index),"items":[1,2,3],"note":"caf\u00e9"},"queue":"enq","#
            + #""priority":\#(index % 10),"run_at":"2030-01-01T00:00:\#(String(format: "%02d", index % 60)).123Z","#
            + #""deadline":"2030-01-02T00:00:00Z","max_attempts":8,"timeout_ms":5000,"expect_content_type":"application/json"}"#
    }

    /// The webhook line with a `unique_key` (all distinct), which takes the staging path.
    static func uniqueLine(_ index: Int) -> String {
        #"{"url":"http://127.0.0.1:18080/hooks/\#(index % 100)","body":{"event":"order.paid","order":\#(index)},"queue":"enq","unique_key":"order-\#(index)"}"#
    }

    enum LineKind: String { case webhook, rich, unique }

    func ndjsonFile(_ kind: LineKind = .webhook) throws -> String {
        let path = context.workDirectory + "/enqueue-\(kind.rawValue)-\(lines).ndjson"
        if !FileManager.default.fileExists(atPath: path) {
            var text = ""
            text.reserveCapacity(lines * (kind == .rich ? 450 : 130))
            for index in 0..<lines {
                switch kind {
                case .webhook: text += Self.line(index)
                case .rich: text += Self.richLine(index)
                case .unique: text += Self.uniqueLine(index)
                }
                text += "\n"
            }
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        return path
    }

    /// Runs `jobctl enqueue --ndjson file` and returns its wall time, process start to exit.
    func timeJobctl(_ file: String, _ connection: PostgresConnection) throws -> Double {
        try context.resetQueue(connection)
        let started = monotonicSeconds()
        let jobctl = try ChildProcess(context.binDirectory + "/jobctl",
                                      ["enqueue", "--ndjson", file, "--database-url", context.connectionString],
                                      logPath: context.workDirectory + "/jobctl-enqueue.log")
        guard jobctl.wait(timeout: 600) == 0 else { throw BenchError("jobctl enqueue failed:\n\(jobctl.output.suffix(2000))") }
        let seconds = monotonicSeconds() - started
        let loaded = try context.count(connection, "select count(*) from courier.jobs")
        guard loaded == lines else { throw BenchError("jobctl enqueued \(loaded) jobs, expected \(lines)") }
        return seconds
    }

    func run(rep: Int) throws {
        let file = try ndjsonFile()
        let connection = try context.connect()
        defer { connection.close() }

        // 1. jobctl, end to end: the webhook lines, then the lines that use most fields.
        let jobctlSeconds = try timeJobctl(file, connection)
        let richSeconds = try timeJobctl(try ndjsonFile(.rich), connection)
        let uniqueSeconds = try timeJobctl(try ndjsonFile(.unique), connection)

        // 2. In process: parse and validate (one thread), then enqueueMany (one COPY into courier.jobs).
        try context.resetQueue(connection)
        let t0 = monotonicSeconds()
        guard let data = FileManager.default.contents(atPath: file) else { throw BenchError("cannot read \(file)") }
        var requests: [EnqueueRequest] = []
        requests.reserveCapacity(lines)
        let now = Date()
        for line in data.split(separator: UInt8(ascii: "\n")) {
            let request = try EnqueueRequest(jsonLine: String(decoding: line, as: UTF8.self))
            try request.validate(now: now)
            requests.append(request)
        }
        let t1 = monotonicSeconds()
        let result = try JobsTable.enqueueMany(requests, on: connection)
        let t2 = monotonicSeconds()
        guard result.inserted == lines else { throw BenchError("enqueueMany inserted \(result.inserted), expected \(lines)") }

        // 3. SQL courier.enqueue, one call per transaction.
        try context.resetQueue(connection)
        let sql = "select courier.enqueue(url => $1::text, body => $2::text, queue => 'enq')"
        let s0 = monotonicSeconds()
        for index in 0..<sqlCalls {
            try connection.query(PostgresQuery(unsafeSQL: sql, binds: ["http://127.0.0.1:18080/hooks/\(index % 100)",
                                                                     #"{"event":"order.paid","order":\#(index)}"#]))
        }
        let sqlSeconds = monotonicSeconds() - s0
        let inserted = try context.count(connection, "select count(*) from courier.jobs")
        guard inserted == sqlCalls else { throw BenchError("courier.enqueue loop left \(inserted) jobs, expected \(sqlCalls)") }
        try context.resetQueue(connection)

        context.log.record("enqueue", [
            "rep": rep, "lines": lines, "sql_calls": sqlCalls,
            "jobctl_seconds": Stats.rounded(jobctlSeconds, 4), "jobctl_jobs_per_s": Stats.rounded(Double(lines) / jobctlSeconds, 1),
            "jobctl_rich_seconds": Stats.rounded(richSeconds, 4),
            "jobctl_rich_jobs_per_s": Stats.rounded(Double(lines) / richSeconds, 1),
            "jobctl_unique_seconds": Stats.rounded(uniqueSeconds, 4),
            "jobctl_unique_jobs_per_s": Stats.rounded(Double(lines) / uniqueSeconds, 1),
            "parse_seconds": Stats.rounded(t1 - t0, 4), "copy_seconds": Stats.rounded(t2 - t1, 4),
            "inprocess_jobs_per_s": Stats.rounded(Double(lines) / (t2 - t0), 1),
            "copy_jobs_per_s": Stats.rounded(Double(lines) / (t2 - t1), 1),
            "sql_seconds": Stats.rounded(sqlSeconds, 4), "sql_jobs_per_s": Stats.rounded(Double(sqlCalls) / sqlSeconds, 1),
        ])
    }
}
