import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `courier.replay_dead_letters(...)` called from SQL, as scripts would, and big
/// replays next to other destinations' work.
@Suite("courier.replay_dead_letters")
struct ReplayDeadLettersSQLTests {
    let worker = UUID()

    @Test func dryRunSelectsButChangesNothing() throws {
        try ControlFixture.with { fixture throws in
            let a = try fixture.deadLetter(failedAgo: 300)
            let b = try fixture.deadLetter(failedAgo: 200)
            try fixture.deadLetter(failedAgo: 100, replayed: true)
            let rows = try fixture.db.query("""
                select dead_letter_id, new_job_id from courier.replay_dead_letters(dry_run => true)
                """).rows
            #expect(try rows.map { try $0.decode(0, as: Int64.self) } == [a, b])
            #expect(try rows.allSatisfy { try $0.decode(1, as: Int64?.self) == nil })
            #expect(try fixture.jobCount == 0)
            #expect(try fixture.replayedIDs().count == 1)
        }
    }

    @Test func replayKeepsTheRequestAndKeyWithFreshAttempts() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.deadLetter(reason: "exhausted", destination: "https://api.example.com:443", queue: "mail",
                                            url: "https://api.example.com/v1/hook", key: "key-kept", attempt: 5)
            try fixture.db.query("update courier.dead_letters set unique_key = 'u-1', priority = -4 where id = \(id)")
            let row = try #require(try fixture.db.query("select new_job_id from courier.replay_dead_letters(ids => array[\(id)]::bigint[])").rows.first)
            let job = try row.decode(0, as: Int64.self)
            let stored = try #require(try fixture.db.query("""
                select queue, priority, destination, method, url, headers->>'Content-Type', body, idempotency_key, unique_key,
                       attempt, jsonb_array_length(errors), state, max_attempts
                from courier.jobs where id = \(job)
                """).rows.first)
            #expect(try stored.decode(0, as: String.self) == "mail")
            #expect(try stored.decode(1, as: Int.self) == -4)
            #expect(try stored.decode(2, as: String.self) == "https://api.example.com:443")
            #expect(try stored.decode(3, as: String.self) == "POST")
            #expect(try stored.decode(4, as: String.self) == "https://api.example.com/v1/hook")
            #expect(try stored.decode(5, as: String.self) == "application/json")
            #expect(try stored.decode(6, as: String.self) == #"{"n": 1}"#)
            #expect(try stored.decode(7, as: String.self) == "key-kept", "receivers deduplicate by the original key")
            #expect(try stored.decode(8, as: String?.self) == nil, "unique_key is not carried over")
            #expect(try stored.decode(9, as: Int.self) == 0, "fresh attempts")
            #expect(try stored.decode(10, as: Int.self) == 0)
            #expect(try stored.decode(11, as: String.self) == "available")
            #expect(try stored.decode(12, as: Int.self) == 5)
            #expect(try fixture.int("""
                select count(*)::bigint from courier.dead_letters
                where id = \(id) and replayed_at is not null and replay_job_id = \(job)
                """) == 1)
        }
    }

    @Test func rateSpreadsRunAtFromTheStart() throws {
        try ControlFixture.with { fixture throws in
            let ids = try (0..<5).map { try fixture.deadLetter(failedAgo: Double(500 - $0)) }
            let start = Date(timeIntervalSince1970: 1_900_000_000)
            let rows = try fixture.db.query("""
                select dead_letter_id, new_job_id, run_at
                from courier.replay_dead_letters(rate_per_second => 4, start_at => \(start)::timestamptz)
                """).rows
            #expect(try rows.map { try $0.decode(0, as: Int64.self) } == ids, "oldest first")
            for (n, row) in rows.enumerated() {
                let runAt = try row.decode(2, as: Date.self)
                #expect(abs(runAt.timeIntervalSince(start) - Double(n) * 0.25) < 0.000_01, "job \(n) at \(runAt)")
                let job = try row.decode(1, as: Int64.self)
                let stored = try fixture.db.query("select run_at from courier.jobs where id = \(job)").rows[0].decode(0, as: Date.self)
                #expect(stored == runAt)
            }
        }
    }

    @Test func chunksContinueThePaceWithStartIndex() throws {
        try ControlFixture.with { fixture throws in
            for n in 0..<6 { try fixture.deadLetter(failedAgo: Double(600 - n)) }
            let start = Date(timeIntervalSince1970: 1_900_000_000)
            var offsets: [Double] = []
            var index = 0
            while true {
                let rows = try fixture.db.query("""
                    select run_at from courier.replay_dead_letters(rate_per_second => 2, start_at => \(start)::timestamptz,
                                                                   start_index => \(index)::bigint, max_rows => 4)
                    """).rows
                if rows.isEmpty { break }
                offsets += try rows.map { try $0.decode(0, as: Date.self).timeIntervalSince(start) }
                index += rows.count
            }
            #expect(offsets == [0, 0.5, 1, 1.5, 2, 2.5])
        }
    }

    @Test func deadlineRule() throws {
        try ControlFixture.with { fixture throws in
            // Expired: enqueued 3h ago with a 2h window, so the new job gets 2h after its new start.
            let expired = try fixture.deadLetter(failedAgo: 3000, deadline: Date().addingTimeInterval(-3600), createdAgo: 3 * 3600)
            // Still ahead of the new start: kept as it is.
            let aheadDeadline = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 86_400).rounded())
            let ahead = try fixture.deadLetter(failedAgo: 2000, deadline: aheadDeadline)
            let none = try fixture.deadLetter(failedAgo: 1000)
            try fixture.db.query("select * from courier.replay_dead_letters(rate_per_second => 1)")
            func job(_ id: Int64) throws -> PostgresRow {
                try #require(try fixture.db.query("""
                    select j.deadline, extract(epoch from j.deadline - j.run_at)::float8, j.run_at
                    from courier.jobs j join courier.dead_letters d on d.replay_job_id = j.id where d.id = \(id)
                    """).rows.first)
            }
            let window = try job(expired).decode(1, as: Double.self)
            #expect(abs(window - 7200) < 1, "a new deadline as long after the new run_at as the original window: \(window)")
            #expect(try job(ahead).decode(0, as: Date.self) == aheadDeadline)
            #expect(try job(none).decode(0, as: Date?.self) == nil)
        }
    }

    @Test func aDeadlineBehindTheNewStartIsRenewedToo() throws {
        try ControlFixture.with { fixture throws in
            // The deadline is still in the future, but the paced start comes after it.
            let id = try fixture.deadLetter(failedAgo: 60, deadline: Date().addingTimeInterval(600), createdAgo: 1200)
            let start = Date().addingTimeInterval(3600)
            let row = try fixture.db.query("""
                select run_at from courier.replay_dead_letters(ids => array[\(id)]::bigint[], start_at => \(start)::timestamptz)
                """).rows[0]
            let runAt = try row.decode(0, as: Date.self)
            let deadline = try fixture.db.query("select deadline from courier.jobs").rows[0].decode(0, as: Date.self)
            #expect(deadline > runAt)
            #expect(abs(deadline.timeIntervalSince(runAt) - 1800) < 1, "created 20m ago with a deadline 10m ahead: a 30m window")
        }
    }

    @Test func replayedOnceUnlessForcedAndForcedOncePerRun() throws {
        try ControlFixture.with { fixture throws in
            let ids = try (0..<3).map { try fixture.deadLetter(failedAgo: Double(300 - $0)) }
            #expect(try fixture.db.query("select * from courier.replay_dead_letters()").rows.count == 3)
            #expect(try fixture.db.query("select * from courier.replay_dead_letters()").rows.isEmpty)
            #expect(try fixture.db.query("select * from courier.replay_dead_letters(ids => \(ids)::bigint[])").rows.isEmpty)
            // A forced replay in chunks: replayed_before keeps each chunk off the rows earlier chunks took.
            let before = try DeadLettersTable.databaseNow(on: fixture.db)
            var replayed: [Int64] = []
            while true {
                let chunk = try fixture.db.query("""
                    select dead_letter_id from courier.replay_dead_letters(force => true, max_rows => 2,
                                                                           replayed_before => \(before)::timestamptz)
                    """).rows.map { try $0.decode(0, as: Int64.self) }
                if chunk.isEmpty { break }
                replayed += chunk
                try #require(replayed.count <= 3, "a forced replay must not take its own rows again")
            }
            #expect(replayed == ids)
            #expect(try fixture.jobCount == 6)
        }
    }

    @Test func filtersMatchTheColumns() throws {
        try ControlFixture.with { fixture throws in
            let hit = try fixture.deadLetter(reason: "deadline", destination: "https://x.example.com:443", queue: "q9",
                                             lastClass: "timeout", lastStatus: nil, failedAgo: 100)
            try fixture.deadLetter(reason: "deadline", destination: "https://x.example.com:443", queue: "q9",
                                   lastClass: "timeout", lastStatus: nil, failedAgo: 5000)
            try fixture.deadLetter(reason: "exhausted", destination: "https://x.example.com:443", queue: "q9",
                                   lastClass: "timeout", lastStatus: nil, failedAgo: 100)
            try fixture.deadLetter(reason: "deadline", destination: "https://y.example.com:443", queue: "q9",
                                   lastClass: "timeout", lastStatus: nil, failedAgo: 100)
            let rows = try fixture.db.query("""
                select dead_letter_id from courier.replay_dead_letters(
                    reasons => array['deadline'], destinations => array['https://x.example.com:443'], queues => array['q9'],
                    classes => array['timeout'], since => now() - interval '1 hour', until => now(), dry_run => true)
                """).rows
            #expect(try rows.map { try $0.decode(0, as: Int64.self) } == [hit])
        }
    }

    @Test func badArgumentsRaise22023AndChangeNothing() throws {
        try ControlFixture.with { fixture throws in
            try fixture.deadLetter()
            #expect(sqlState { try fixture.db.query("select * from courier.replay_dead_letters(rate_per_second => 0)") } == "22023")
            #expect(sqlState { try fixture.db.query("select * from courier.replay_dead_letters(rate_per_second => -1)") } == "22023")
            #expect(sqlState { try fixture.db.query("select * from courier.replay_dead_letters(reasons => array['bogus'])") } == "22023")
            #expect(sqlState { try fixture.db.query("select * from courier.replay_dead_letters(max_rows => 0)") } == "22023")
            #expect(try fixture.jobCount == 0)
            #expect(try fixture.replayedIDs().isEmpty)
        }
    }

    @Test func replayedJobsWaitWhileTheirBreakerIsOpen() throws {
        try ControlFixture.with { fixture throws in
            let destination = "https://down.example.com:443"
            try fixture.deadLetter(destination: destination)
            try fixture.db.query("select courier.breaker_force(\(destination), 'open', 'test')")
            #expect(try fixture.db.query("select * from courier.replay_dead_letters()").rows.count == 1)
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 60_000, on: fixture.db).isEmpty,
                    "held back while the breaker is open")
            try fixture.db.query("select courier.breaker_force(\(destination), 'close', 'test')")
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 60_000, on: fixture.db)
            #expect(claimed.map(\.destination) == [destination])
        }
    }

    /// `count` exhausted dead letters of `destination`, each with its own url and idempotency key.
    static func insertDeadLetters(_ count: Int, destination: String, on db: PostgresConnection) throws {
        try TestRows(db).deadLetters(count) { d in
            d.destination = destination
            d.url = destination + "/hook"
            d.numbered = true
            d.idempotencyKey = "bulk"
            d.headers = #"{"Content-Type": "application/json"}"#
            d.body = #"{"n": 1}"#
            d.errors = #"[{"attempt": 5, "class": "server", "status": 500, "message": "HTTP 500"}]"#
            d.lastClass = "server"
            d.lastStatus = 500
            d.createdAgo = .seconds(7200)
            d.failedAgo = .seconds(3600)
        }
    }

    @Test func aHundredThousandReplayedThroughJobctl() throws {
        try ControlFixture.with { fixture throws in
            try Self.insertDeadLetters(100_000, destination: "https://bulk.example.com:443", on: fixture.db)
            let result = fixture.run(["dead", "replay", "--all", "--rate", "500/s", "--json"])
            #expect(result.status == 0, "\(result)")
            #expect((try result.object()["replayed"] as? NSNumber)?.intValue == 100_000)
            #expect(try fixture.jobCount == 100_000)
            #expect(try fixture.int("select count(*)::bigint from courier.dead_letters where replayed_at is null") == 0)
            #expect(try fixture.int("select count(distinct idempotency_key)::bigint from courier.jobs") == 100_000)
            // Paced over the whole replay, across chunks: the n-th job 1/500 s after the one before.
            let span = try fixture.db.query("select extract(epoch from max(run_at) - min(run_at))::float8 from courier.jobs")
                .rows[0].decode(0, as: Double.self)
            #expect(abs(span - 99_999.0 / 500) < 0.01, "span \(span)")
        }
    }

    @Test func anOpenReplayTransactionDoesNotHoldUpOtherDestinations() throws {
        try ControlFixture.with { fixture throws in
            try Self.insertDeadLetters(100_000, destination: "https://bulk.example.com:443", on: fixture.db)
            let replaying = try fixture.database.connect()
            defer { replaying.close() }
            let other = try fixture.database.connect()
            defer { other.close() }
            // A hang fails the test instead of stalling it.
            try other.simpleQuery("set statement_timeout = '30s'")

            try replaying.simpleQuery("begin")
            let replayed = try replaying.query("select count(*)::bigint from courier.replay_dead_letters(rate_per_second => 1000)")
                .rows[0].decode(0, as: Int.self)
            #expect(replayed == 100_000)

            // While that transaction is open: another destination's job, even on the same queue, is enqueued and claimed.
            let id = try JobsTable.enqueue(EnqueueRequest(url: "https://other.example.com/ping"), on: other)
            let claimed = try JobsTable.claim(queue: "default", limit: 10, worker: worker, leaseMilliseconds: 60_000, on: other)
            #expect(claimed.map(\.id) == [id])
            // A second replay at the same time skips the rows the first one holds instead of waiting for them.
            let concurrent = jobctl(["dead", "replay", "--all", "--json"], databaseURL: fixture.database.url)
            #expect(concurrent.status == 0, "\(concurrent)")
            #expect((try concurrent.object()["replayed"] as? NSNumber)?.intValue == 0)

            try replaying.simpleQuery("commit")
            #expect(try fixture.jobCount == 100_001)
        }
    }
}
