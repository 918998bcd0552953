import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The queue-name rule and the idempotent-method list are written once, in Swift
/// (`QueueName`, `HTTPMethod.idempotent`). Every SQL door that applies them must agree
/// with Swift value by value.
@Suite struct RuleAgreementTests {
    /// Hand-picked edges plus seeded random names over allowed and refused characters.
    static let queueSamples: [String] = {
        var samples = [
            "default", "Q", "a:b.c-d_e", String(repeating: "q", count: 64), String(repeating: "q", count: 65),
            "", " ", "a b", "a\n", "default\n", "\nb", "é", "a/b", "a\tb", "-", ":", ".", "_", "9", "A\u{301}",
            "a'b", "a;b", "a%b", "a\\b", "Ω", "😀", "a,b",
        ]
        var rng = SplitMix64(seed: 11)
        let alphabet = Array("azAZ09_.:-") + Array(" /\n\té,'%;*+@") + ["😀"]
        for _ in 0..<300 {
            let length = Int.random(in: 1...70, using: &rng)
            samples.append(String((0..<length).map { _ in
                Int.random(in: 0..<10, using: &rng) < 9 ? alphabet[Int.random(in: 0..<10, using: &rng)] : alphabet.randomElement(using: &rng)!
            }))
        }
        var seen = Set<String>()
        return samples.filter { seen.insert($0).inserted }  // queue_settings holds each name once
    }()

    /// Runs `body` in a savepoint; true when it succeeded, false when PostgreSQL refused it
    /// with one of `refusals` (any other error fails the test).
    func accepted(_ db: PostgresConnection, _ refusals: Set<String>, _ what: String, _ body: () throws -> Void) throws -> Bool {
        try db.query("savepoint s")
        do {
            try body()
            try db.query("release savepoint s")
            return true
        } catch let error as PostgresError {
            try db.query("rollback to savepoint s")
            #expect(refusals.contains(error.sqlState ?? ""), "\(what): \(error)")
            return false
        }
    }

    @Test func everySQLDoorAgreesWithQueueName() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try db.query("begin")
            defer { _ = try? db.query("rollback") }
            for name in Self.queueSamples {
                let swift = QueueName.isValid(name)
                let label = name.debugDescription
                let pattern = try db.query("select \(name)::text ~ \(QueueName.pattern)::text").rows[0].decode(0, as: Bool.self)
                #expect(pattern == swift, "pattern \(label)")
                #expect(try accepted(db, ["23514"], "domain \(label)") {
                    try db.query("select \(name)::text::courier.queue_name")
                } == swift, "courier.queue_name \(label)")
                #expect(try accepted(db, ["22023"], "enqueue \(label)") {
                    try db.query("select courier.enqueue(url => 'http://example.com/', queue => \(name))")
                } == swift, "courier.enqueue \(label)")
                #expect(try accepted(db, ["22023"], "enqueue_job \(label)") {
                    try db.query("select courier.enqueue_job(kind => 'noop', queue => \(name))")
                } == swift, "courier.enqueue_job \(label)")
                #expect(try accepted(db, ["23514"], "queue_settings \(label)") {
                    try db.query("insert into courier.queue_settings (queue, jitter) values (\(name), 'none')")
                } == swift, "courier.queue_settings \(label)")
                var request = EnqueueRequest(url: "http://example.com/")
                request.queue = name
                #expect(((try? request.validate()) != nil) == swift, "EnqueueRequest \(label)")
            }
        }
    }

    /// The lease rescue decides in SQL whether a job whose worker died may run again; for
    /// a job without an idempotency key that is exactly `HTTPMethod.isIdempotent`.
    @Test func theLeaseRescueAgreesWithTheIdempotentList() throws {
        let methods = HTTPMethod.idempotent.map(\.rawValue) + ["POST", "PATCH", "CONNECT", "PROPFIND", "M-SEARCH", "PURGE", "LINK"]
        try CourierTestDatabase.with { (_, db) throws in
            var ids: [String: Int64] = [:]
            for method in methods {
                var request = EnqueueRequest(url: "https://example.com/x")
                request.method = method
                request.idempotencyKey = .none
                ids[method] = try JobsTable.enqueue(request, on: db)
            }
            _ = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: 30_000, on: db)
            try TestRows(db).expireLeases(.all)
            _ = try JobsTable.rescueExpired(on: db)
            for method in methods {
                let id = try #require(ids[method])
                let ambiguous = try JobsTable.get(id: id, on: db)?.deadReason == "ambiguous"
                #expect(ambiguous == !HTTPMethod.isIdempotent(method), "\(method)")
            }
            #expect(methods.filter(HTTPMethod.isIdempotent) == ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])
        }
    }

    /// A cron expression the parser accepts always fits `courier.schedules.cron`: the column's
    /// check and ``CronExpression/maximumLength`` say the same length.
    @Test func theScheduleTableKeepsEveryCronExpressionTheParserAccepts() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let check = try db.query("""
                select pg_get_constraintdef(oid) from pg_constraint where conname = 'schedules_cron_check'
                """).rows[0].decode(0, as: String.self)
            #expect(check.contains("<= \(CronExpression.maximumLength)"), "\(check)")
        }
    }
}
