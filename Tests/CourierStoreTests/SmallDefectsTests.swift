import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 12's smaller defects, one test each.
@Suite(.serialized) struct SmallDefectsTests {
    let worker = UUID()

    func claimOne(_ db: PostgresConnection, deadline: Date? = nil) throws -> ClaimedJob {
        var request = EnqueueRequest(url: "https://e.com/hook")
        request.deadline = deadline
        _ = try JobsTable.enqueue(request, on: db)
        return try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db).first)
    }

    @Test func aRetryOfAJobCancelledWhileItRanEndsAsACancelledDeadLetter() throws {
        try CourierTestDatabase.with { _, db in
            let job = try claimOne(db)
            // The operator cancels after the worker's last look: the worker still decides to retry.
            try TestRows(db).requestCancel(.id(job.id))
            let error = #"{"attempt":1,"class":"server","status":500,"message":"HTTP 500"}"#
            #expect(try JobsTable.retry([.init(id: job.id, attempt: 1, lease: 1, delayMilliseconds: 0, errorJSON: error)], worker: worker, on: db) == [job.id])
            let record = try #require(try JobsTable.get(id: job.id, on: db))
            #expect(record.status == .dead, "not back in the queue")
            #expect(record.deadReason == "cancelled")
            #expect(record.errors.map(\.errorClass) == ["server"], "the attempt that ran is kept")
        }
    }

    @Test func aDeadlineDeadLetterCountsNoAttemptAndFollowsTheDatabasesClock() throws {
        try CourierTestDatabase.with { _, db in
            let passed = try claimOne(db, deadline: Date().addingTimeInterval(3600))
            try TestRows(db).expireDeadline(.id(passed.id))
            #expect(try JobsTable.deadLetter([.init(id: passed.id, attempt: 1, lease: 1, reason: .deadline, errorJSON: nil, lastClass: nil, lastStatus: nil)],
                                             worker: worker, on: db) == [passed.id])
            #expect(try db.query("select attempt from courier.dead_letters where job_id = \(passed.id)").rows[0].decode(0, as: Int.self) == 0,
                    "the attempt never ran")

            // The worker's clock says the deadline passed; the database's does not: back, unattempted, until the deadline.
            let ahead = try claimOne(db, deadline: Date().addingTimeInterval(3600))
            #expect(try JobsTable.deadLetter([.init(id: ahead.id, attempt: 1, lease: 1, reason: .deadline, errorJSON: nil, lastClass: nil, lastStatus: nil)],
                                             worker: worker, on: db) == [ahead.id])
            let row = try db.query("select state, attempt, run_at >= deadline from courier.jobs where id = \(ahead.id)").rows[0]
            #expect(try row.decode(0, as: String.self) == "available")
            #expect(try row.decode(1, as: Int.self) == 0)
            #expect(try row.decode(2, as: Bool.self))
            #expect(try db.query("select count(*)::int from courier.dead_letters where job_id = \(ahead.id)").rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func concurrentStatisticsFlushesOfOverlappingKeysDoNotDeadlock() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let keys = (0..<40).map { AttemptStatsTable.Key(queue: "q\($0 % 4)", destination: "https://d\($0).example.com:443", errorClass: "success") }
        var counts = AttemptStatsTable.Counts()
        counts.attempts = 1
        try await withThrowingTaskGroup(of: Void.self) { group in
            for flusher in 0..<3 {
                // Each worker's dictionary holds the keys in its own order (other processes hash differently).
                var batch = [AttemptStatsTable.Key: AttemptStatsTable.Counts](minimumCapacity: 64 << flusher)
                for key in keys.shuffled() { batch[key] = counts }
                group.addTask { [batch] in
                    let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                    defer { connection.close() }
                    // Several flushes per transaction, as several keys per statement: overlapping row locks.
                    for _ in 0..<30 {
                        try connection.withTransaction { tx in
                            try AttemptStatsTable.add(batch, on: tx)
                            try AttemptStatsTable.add(batch, on: tx)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        #expect(try db.query("select sum(attempts)::int from courier.attempt_stats").rows[0].decode(0, as: Int.self) == 3 * 30 * 2 * 40)
    }

    @Test func renewalsAndAcknowledgementsOfTheSameJobsDoNotDeadlock() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let total = 600
        _ = try JobsTable.enqueueMany((0..<total).map { EnqueueRequest(url: "https://e.com/\($0)") }, on: db)
        let jobs = try JobsTable.claim(queue: "default", limit: total, worker: worker, leaseMilliseconds: 60_000, on: db)
        #expect(jobs.count == total)
        let leases = jobs.map { (id: $0.id, lease: $0.lease) }
        let worker = worker
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                defer { connection.close() }
                // The heartbeater renews everything held, in a transaction with a second renewal.
                for _ in 0..<40 {
                    try connection.withTransaction { tx in
                        _ = try JobsTable.renewLeases(leases.shuffled(), worker: worker, leaseMilliseconds: 60_000, on: tx)
                        _ = try JobsTable.renewLeases(leases.shuffled(), worker: worker, leaseMilliseconds: 60_000, on: tx)
                    }
                }
            }
            group.addTask {
                let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                defer { connection.close() }
                // The completer acknowledges them in shuffled batches meanwhile.
                for chunk in stride(from: 0, to: total, by: 50).map({ Array(leases.shuffled()[0..<0]) + Array(leases[$0..<min($0 + 50, total)]).shuffled() }) {
                    _ = try JobsTable.complete(chunk.map { .init(id: $0.id, attempt: 1, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                                               worker: worker, on: connection)
                }
            }
            try await group.waitForAll()
        }
        #expect(try db.query("select count(*)::int from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
    }

    @Test func leaseRenewalsAreHOTUpdates() throws {
        try CourierTestDatabase.with { _, db in
            _ = try JobsTable.enqueueMany((0..<200).map { EnqueueRequest(url: "https://e.com/\($0)") }, on: db)
            let jobs = try JobsTable.claim(queue: "default", limit: 200, worker: worker, leaseMilliseconds: 60_000, on: db)
            func updates() throws -> (all: Int, hot: Int) {
                try db.query("select pg_stat_force_next_flush()")
                let row = try db.query(PostgresQuery(unsafeSQL: """
                    select sum(n_tup_upd)::int, sum(n_tup_hot_upd)::int from pg_stat_user_tables where relid in (\(JobsPartitions.relids))
                    """)).rows[0]
                return (try row.decode(0, as: Int.self), try row.decode(1, as: Int.self))
            }
            let before = try updates()
            for _ in 0..<5 {
                _ = try JobsTable.renewLeases(jobs.map { ($0.id, $0.lease) }, worker: worker, leaseMilliseconds: 60_000, on: db)
            }
            let after = try updates()
            let all = after.all - before.all, hot = after.hot - before.hot
            #expect(all == 1000)
            // With lease_expires_at indexed (jobs_lease_idx) none could be; a page that fills before it is
            // pruned still takes a few non-HOT versions.
            #expect(Double(hot) >= 0.5 * Double(all), "\(hot) of \(all) renewals were HOT")
        }
    }

    @Test func sqlAndSwiftDeriveTheSameDestinationAndRefuseTheSamePorts() throws {
        try CourierTestDatabase.with { _, db in
            let urls = [
                "http://[::0001]/", "https://[2001:DB8:0:0:0:0:0:1]:8443/x", "http://[2001:db8::0:1]/", "http://[0:0::1]:80/",
                "http://[2001:db8:0:1:0:0:0:1]/", "http://[::ffff:192.0.2.1]/", "http://[FE80::A]/", "https://Example.COM/",
                "http://127.0.0.1:65535/",
            ]
            for url in urls {
                let swift = try Destination.derive(fromURL: url)
                let sql = try db.query("select courier.destination_of(\(url))").rows[0].decode(0, as: String?.self)
                #expect(sql == swift, "\(url): SQL \(sql ?? "nil"), Swift \(swift)")
            }
            for url in ["http://e.com:65536/", "http://e.com:99999/", "http://e.com:0/"] {
                #expect(throws: (any Error).self, "\(url) is refused in Swift") { try Destination.derive(fromURL: url) }
                #expect(try db.query("select courier.destination_of(\(url))").rows[0].decode(0, as: String?.self) == nil,
                        "\(url) is refused in SQL")
                var failed = false
                do { _ = try db.query("select courier.enqueue(url => \(url))") } catch { failed = true }
                #expect(failed, "courier.enqueue refuses \(url)")
            }
        }
    }

    @Test func sqlEnqueueRefusesCRLFInHeaderValues() throws {
        try CourierTestDatabase.with { _, db in
            for value in ["a\r\nX-Injected: 1", "a\nb", "a\rb"] {
                let headers = try String(decoding: JSONSerialization.data(withJSONObject: ["X-Test": value]), as: UTF8.self)
                var state: String?
                do { _ = try db.query("select courier.enqueue(url => 'http://e.com/', headers => \(headers)::jsonb)") }
                catch let error as PostgresError { state = error.sqlState }
                #expect(state == "22023", "\(value.debugDescription) is refused")
            }
        }
    }
}
