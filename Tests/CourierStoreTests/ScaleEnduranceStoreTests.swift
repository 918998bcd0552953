import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 12 at the scale where it bites: pruning, purging and replaying big tables.
@Suite(.serialized) struct ScaleEnduranceStoreTests {
    /// `count` archived successes that finished `ageSeconds` ago, in one statement.
    func archive(_ count: Int, ageSeconds: Int, firstID: Int, on db: PostgresConnection) throws {
        try db.execute("""
            insert into courier.completed_jobs (id, kind, queue, destination, method, url, attempt, status, created_at, finished_at)
            select g, 'http', 'default', 'https://e.com:443', 'POST', 'https://e.com/', 1, 200,
                   now() - \(ageSeconds + 10) * interval '1 second', now() - \(ageSeconds) * interval '1 second'
            from generate_series(\(firstID), \(firstID + count - 1)) g
            """)
    }

    /// `count` dead letters, failed `ageSeconds` ago, replayed already when `replayed`.
    func deadLetters(_ count: Int, ageSeconds: Int, replayed: Bool, on db: PostgresConnection) throws {
        try TestRows(db).deadLetters(count, createdAgo: .seconds(86_400), failedAgo: .seconds(ageSeconds),
                                     replayedAgo: replayed ? .seconds(3600) : nil)
    }

    @Test func twoWorkersPrune200kArchivedRowsConcurrentlyWithoutSharingRowsAndReachTheTarget() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let old = 200_000, recent = 1_000
        try archive(old, ageSeconds: 7200, firstID: 1, on: db)
        try archive(recent, ageSeconds: 10, firstID: old + 1, on: db)
        try db.simpleQuery("analyze courier.completed_jobs")

        // Two prunes run side by side, each looping while its batches come back full.
        let batch = 5000
        let results = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
                    defer { connection.close() }
                    var batches: [Int] = []
                    while true {
                        let deleted = try JobsTable.pruneCompleted(olderThanMilliseconds: 3_600_000, batch: batch, on: connection)
                        batches.append(deleted)
                        if deleted < batch { return batches }
                    }
                }
            }
            var all: [[Int]] = []
            for try await batches in group { all.append(batches) }
            return all
        }
        #expect(results.flatMap { $0 }.reduce(0, +) == old, "every old row deleted exactly once")
        #expect(try count("select count(*)::int from courier.completed_jobs", on: db) == recent, "the table reaches its target: only rows inside the retention remain")
        // No batch came back short while old rows were left: the two never waited on each other's rows.
        for batches in results { #expect(batches.dropLast().allSatisfy { $0 == batch }, "\(batches)") }
    }

    @Test func aPruneSkipsRowsAnotherPruneHoldsInsteadOfWaitingForThem() throws {
        try CourierTestDatabase.with { database, db in
            try archive(20_000, ageSeconds: 7200, firstID: 1, on: db)
            let other = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { other.close() }
            // Another worker's prune is under way: its batch is deleted but not yet committed.
            try other.simpleQuery("begin")
            #expect(try JobsTable.pruneCompleted(olderThanMilliseconds: 3_600_000, batch: 5000, on: other) == 5000)
            // This prune must neither wait for that transaction nor pick the same rows.
            try db.simpleQuery("set statement_timeout = '5s'")
            #expect(try JobsTable.pruneCompleted(olderThanMilliseconds: 3_600_000, batch: 5000, on: db) == 5000)
            try other.simpleQuery("commit")
            try db.simpleQuery("reset statement_timeout")
            #expect(try count("select count(*)::int from courier.completed_jobs", on: db) == 10_000)
        }
    }

    @Test func breakerEventsArePrunedInBatchesAndRecentOnesKept() throws {
        try CourierTestDatabase.with { _, db in
            try db.execute("""
                insert into courier.breaker_events (destination, from_state, to_state, reason, generation, at)
                select 'https://e.com:443', 'closed', 'open', 'failures', g, now() - interval '10 days'
                from generate_series(1, 12000) g
                """)
            try db.execute("""
                insert into courier.breaker_events (destination, from_state, to_state, reason, generation)
                values ('https://e.com:443', 'open', 'half_open', 'cooldown', 12001)
                """)
            let week: Int64 = 7 * 86_400_000
            #expect(try BreakersTable.pruneEvents(olderThanMilliseconds: week, batch: 5000, on: db) == 5000)
            #expect(try BreakersTable.pruneEvents(olderThanMilliseconds: week, batch: 5000, on: db) == 5000)
            #expect(try BreakersTable.pruneEvents(olderThanMilliseconds: week, batch: 5000, on: db) == 2000)
            #expect(try BreakersTable.pruneEvents(olderThanMilliseconds: week, batch: 5000, on: db) == 0)
            #expect(try count("select count(*)::int from courier.breaker_events", on: db) == 1)
        }
    }

    /// courier_breaker_transitions_total comes from totals kept beside the events, so it
    /// neither walks the events table nor goes down when old events are pruned.
    @Test func breakerTransitionTotalsOutlivePrunedEvents() throws {
        try CourierTestDatabase.with { _, db in
            let destination = "https://totals.example.com:443"
            let policy = BreakersTable.ReportPolicy(failureThreshold: 1, windowMilliseconds: 10_000, minimumVolume: 10, failureRate: 0.5,
                                                    cooldownMilliseconds: 1_000, cooldownMaxMilliseconds: 1_000, probeLeaseMilliseconds: 1_000)
            #expect(try BreakersTable.report(destination: destination, successes: 0, failures: 1, trailingFailures: 1,
                                             worker: "w", policy: policy, on: db) == "open")
            try db.query("update courier.breakers set open_until = now() where destination = \(destination)")
            let generation = try #require(try BreakersTable.tryProbe(destination: destination, worker: UUID(),
                                                                      probeLeaseMilliseconds: 1_000, on: db))
            _ = try BreakersTable.probeResult(destination: destination, generation: generation, succeeded: true, worker: "w",
                                              policy: policy, jitter: 1, on: db)
            func totals() throws -> [String: Int] {
                Dictionary(uniqueKeysWithValues: try StatsQueries.breakerTransitionCounts(on: db).map { ("\($0.from)>\($0.to)", $0.count) })
            }
            let expected = ["closed>open": 1, "open>half_open": 1, "half_open>closed": 1]
            #expect(try totals() == expected)
            try db.execute("update courier.breaker_events set at = now() - interval '30 days'")
            #expect(try BreakersTable.pruneEvents(olderThanMilliseconds: 86_400_000, on: db) == 3)
            #expect(try count("select count(*)::int from courier.breaker_events", on: db) == 0)
            #expect(try totals() == expected, "pruning must not lower a counter")
        }
    }

    @Test func theAutomaticDeadLetterPurgeIsBounded() throws {
        try CourierTestDatabase.with { _, db in
            try deadLetters(50, ageSeconds: 7200, replayed: false, on: db)
            #expect(try DeadLettersTable.purge(olderThanMilliseconds: 3_600_000, batch: 10, maxBatches: 2, on: db) == 20,
                    "two batches, then it stops however many are left")
            #expect(try DeadLettersTable.purge(olderThanMilliseconds: 3_600_000, batch: 10, on: db) == 30)
        }
    }

    /// Index tuples the dead letters' indexes have read so far (flushed first).
    func deadLetterIndexReads(on db: PostgresConnection) throws -> Int {
        try db.query("select pg_stat_force_next_flush()")
        return try db.query("""
            select coalesce(sum(idx_tup_read), 0)::int from pg_stat_user_indexes
            where schemaname = 'courier' and relname = 'dead_letters'
            """).rows[0].decode(0, as: Int.self)
    }

    @Test func replayingDoesNotWalkPastDeadLettersReplayedBefore() throws {
        try CourierTestDatabase.with { _, db in
            // 30,000 replayed already, failed before the 100 waiting ones.
            try deadLetters(30_000, ageSeconds: 7200, replayed: true, on: db)
            try deadLetters(100, ageSeconds: 60, replayed: false, on: db)
            try db.simpleQuery("analyze courier.dead_letters")
            let before = try deadLetterIndexReads(on: db)
            let rows = try db.query("select dead_letter_id from courier.replay_dead_letters(max_rows => 50)").rows
            #expect(rows.count == 50)
            let read = try deadLetterIndexReads(on: db) - before
            #expect(read < 1000, "a chunk of 50 read \(read) index entries: it walked past the replayed ones")
        }
    }

    @Test func onlyOneForcedReplayRunsAtATime() throws {
        try CourierTestDatabase.with { database, db in
            let other = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { other.close() }
            #expect(try DeadLettersTable.tryLockForcedReplay(on: db))
            #expect(try !DeadLettersTable.tryLockForcedReplay(on: other), "a second forced replay is refused while the first runs")
            try DeadLettersTable.unlockForcedReplay(on: db)
            #expect(try DeadLettersTable.tryLockForcedReplay(on: other), "and may run once it finished")
            try DeadLettersTable.unlockForcedReplay(on: other)
            other.close()
            #expect(try DeadLettersTable.tryLockForcedReplay(on: db), "a session that ends releases the lock")
        }
    }
}
