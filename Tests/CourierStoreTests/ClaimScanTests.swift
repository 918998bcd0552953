import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 12, item 4 and the long-transaction drain: what the plain claim touches, at the
/// scale where it bites. Every assertion is on buffers (shared hit + read, from
/// EXPLAIN (ANALYZE, BUFFERS)), never on time.
@Suite(.serialized) struct ClaimScanTests {
    let lease = 30_000

    /// The claim of migration 0014 (before the loose index scan), for contrast: it walks
    /// every entry of the queue in jobs_runnable_idx, due or not.
    static let claimOf0014 = """
        with picked as (
            select c.id, c.destination from courier.jobs c
            where c.state = 'available' and c.held_since is null and not c.gated and c.queue = $1 and c.run_at <= now()
              and not exists (
                  select 1 from courier.breakers b
                  where b.destination = c.destination
                    and (b.state <> 'closed' or b.not_before > now()))
              and not exists (select 1 from courier.queue_settings q where q.queue = $1 and q.paused)
            order by c.priority, c.run_at, c.id
            limit $2
            for update skip locked
        )
        update courier.jobs j
        set state = 'running', attempt = j.attempt + 1, leased_by = $3,
            lease_expires_at = now() + $4 * interval '1 millisecond', attempted_at = now()
        from picked where j.id = picked.id
        returning j.id
        """

    /// `count` jobs of `queue` for `destination`, due `dueInSeconds` from now (negative: overdue),
    /// with priorities cycling through `priorities`, in one statement.
    func insert(_ count: Int, destination: String = "http://plain.test:80", queue: String = "default",
                dueInSeconds: Int, priorities: Int = 1, on db: PostgresConnection) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (queue, priority, run_at, destination, url)
            select $1::text, g % $4::int, now() + $3::int * interval '1 second' + g * interval '1 microsecond',
                   $2::text, 'http://x.test/'
            from generate_series(1, $5::int) g
            """, binds: [queue, destination, dueInSeconds, priorities, count]))
    }

    /// Shared buffers the statement touched, rolled back so nothing is claimed (see `explainBuffers`).
    func buffers(_ sql: String, _ binds: [any PostgresEncodable], on db: PostgresConnection) throws -> Int {
        try explainBuffers(sql, binds, on: db)
    }

    /// Buffers of one claim of up to `limit` jobs (rolled back). Every job it takes costs its
    /// own update (the row and each index), so claims that take many are measured with a small limit.
    /// The claim is measured the second time it runs in the session: the first also compiles
    /// `courier.claim` and plans its statements (catalog reads), once per session.
    func claimBuffers(queue: String = "default", limit: Int = 100, after position: ClaimPosition? = nil,
                      on db: PostgresConnection) throws -> Int {
        let (sql, binds): (String, [any PostgresEncodable]) = if let position {
            (JobsTable.claimAfterSQL, [queue, limit, UUID(), lease, position.priority, position.runAtMicroseconds, position.id])
        } else {
            (JobsTable.claimSQL, [queue, limit, UUID(), lease])
        }
        _ = try buffers(sql, binds, on: db)
        return try buffers(sql, binds, on: db)
    }

    /// One plain claim of the `default` queue by a new worker, from `position` (nil: from the start).
    func take(_ limit: Int, after position: ClaimPosition? = nil, on db: PostgresConnection) throws -> ClaimBatch {
        try JobsTable.claim(queue: "default", limit: limit, worker: UUID(), leaseMilliseconds: lease, after: position, on: db)
    }

    /// One plain claim of the `default` queue by `worker` from `position`, its jobs then completed
    /// without the archive: their entries in the claim's index are dead from then on.
    func claimAndComplete(_ limit: Int, after position: ClaimPosition?, worker: UUID, on db: PostgresConnection) throws -> ClaimBatch {
        let batch = try JobsTable.claim(queue: "default", limit: limit, worker: worker, leaseMilliseconds: lease,
                                        after: position, on: db)
        try JobsTable.complete(batch.jobs.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: 200, durationMilliseconds: 1) },
                               worker: worker, archive: false, on: db)
        return batch
    }

    @Test func aClaimTouchesNoneOf150kJobsScheduledAheadInFivePriorities() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(150_000, dueInSeconds: 3600, priorities: 5, on: db)
            try insert(2, dueInSeconds: -60, priorities: 1, on: db)          // priority 0
            try db.execute("update courier.jobs set priority = 3 where id in (select id from courier.jobs order by id desc limit 1)")
            try db.simpleQuery("vacuum analyze courier.jobs")

            let before = try buffers(Self.claimOf0014, ["default", 100, UUID(), lease], on: db)
            let now = try claimBuffers(on: db)
            // 0014's claim reads the whole queue's index (about 900 pages here); this one a few
            // per priority (about 77, two descents each, and the two jobs' updates).
            #expect(before > 500, "the old claim should walk the scheduled backlog (\(before) buffers)")
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 190 buffers.
            #expect(now < 250, "the claim touched \(now) buffers with 150k jobs scheduled ahead")

            let claimed = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(claimed.count == 2)
            // Priority order across the loose scan: priority 0 before priority 3.
            let priorities = try claimed.map { job in
                try count("select priority::bigint from courier.jobs where id = \(job.id)", on: db)
            }
            #expect(priorities.sorted() == [0, 3])
        }
    }

    /// A session with JIT on (a pooled worker's: `jit = off` is set only on direct
    /// connections) compiles any statement costed above jit_above_cost, 60 ms per claim.
    /// The claim's estimate must stay below it on a big queue, from the start and from a bound.
    /// (Inside `courier.claim` JIT is off whatever the session says; this is the statement
    /// the worker sends around it.)
    @Test func theClaimIsNeverCostedHighEnoughToBeCompiled() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(200_000, dueInSeconds: -60, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")
            let threshold = try db.query("select current_setting('jit_above_cost')::float8").rows[0].decode(0, as: Double.self)
            func cost(_ sql: String, _ binds: [any PostgresEncodable]) throws -> Double {
                let text = try db.query(PostgresQuery(unsafeSQL: "explain (format json) " + sql, binds: binds))
                    .rows[0].decode(0, as: String.self)
                let plans = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
                return try #require((plans.first?["Plan"] as? [String: Any])?["Total Cost"] as? Double)
            }
            let worker = UUID()
            let full = try cost(JobsTable.claimSQL, ["default", 100, worker, lease])
            let bounded = try cost(JobsTable.claimAfterSQL, ["default", 100, worker, lease, 0, Int64(0), Int64(0)])
            #expect(full < threshold / 10, "the claim is costed \(full), JIT starts at \(threshold)")
            #expect(bounded < threshold / 10, "the claim from a bound is costed \(bounded), JIT starts at \(threshold)")
        }
    }

    /// `courier.claim` plans each of its statements once per session and keeps that plan
    /// (0031). A plan made while courier.jobs was nearly empty, with statistics to match,
    /// must still walk the indexes once the table is big: a sequential scan cached then
    /// (the cheapest plan for a one-page table) would read every page on every claim until
    /// the next ANALYZE, about 5,000 buffers here.
    @Test func aClaimPlannedWhileTheTableWasTinyStaysAnIndexWalkOnceItIsBig() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // No ANALYZE in between: the statistics stay those of the tiny table.
            try JobsPartitions.setAutovacuum(false, on: db)
            try insert(3, dueInSeconds: -60, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")
            _ = try claimBuffers(limit: 1, on: db)
            try insert(100_000, dueInSeconds: -60, priorities: 2, on: db)
            let big = try claimBuffers(limit: 1, on: db)
            #expect(big < 100, "a claim planned on the tiny table touched \(big) buffers on the big one")
        }
    }

    /// The soak's case: autovacuum's ANALYZE runs between bursts, when nearly every job it
    /// samples is a dead version, and records a table of next to no rows while the column
    /// statistics still describe waiting jobs. Planned on that, the claim sorted a bitmap
    /// scan of every waiting job (~200k buffers for a claim of one on 100k jobs); it must
    /// keep walking the index. (The row count is set as such an ANALYZE leaves it: an
    /// ANALYZE of an emptied table keeps no column statistics, and plans well.)
    @Test func aClaimPlannedOnStatisticsThatSayEmptyStaysAnIndexWalk() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try JobsPartitions.setAutovacuum(false, on: db)
            try insert(100_000, dueInSeconds: -60, priorities: 2, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")
            try db.simpleQuery("update pg_class set reltuples = 0 where oid in (\(JobsPartitions.relids))")
            let claim = try claimBuffers(limit: 1, on: db)
            #expect(claim < 200, "a claim planned on empty-table statistics touched \(claim) buffers")
        }
    }

    @Test func theClaimTakesInPriorityRunAtIdOrderAcrossPriorities() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(30, dueInSeconds: -60, priorities: 3, on: db)
            try insert(30, dueInSeconds: 3600, priorities: 3, on: db)
            let expected = try db.query("""
                select id from courier.jobs where run_at <= now() order by priority, run_at, id
                """).rows.map { try $0.decode(0, as: Int64.self) }
            // Each batch of 4 is the next 4 in that order (a batch's rows come back unordered).
            var batches: [Set<Int64>] = []
            var position: ClaimPosition?
            while true {
                let batch = try JobsTable.claim(queue: "default", limit: 4, worker: UUID(), leaseMilliseconds: lease,
                                                after: position, on: db)
                if batch.jobs.isEmpty { break }
                batches.append(Set(batch.jobs.map(\.id)))
                position = batch.last
            }
            let chunks = stride(from: 0, to: expected.count, by: 4).map { Set(expected[$0..<min($0 + 4, expected.count)]) }
            #expect(batches == chunks)
        }
    }

    /// One call takes every waiting priority's due jobs, lowest first, when the limit allows,
    /// and stops at the highest waiting priority (0036 looks no further than that).
    @Test func oneClaimTakesEveryWaitingPriorityUpToTheHighest() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(30, dueInSeconds: -60, priorities: 3, on: db)
            try insert(6, dueInSeconds: 3600, priorities: 3, on: db)
            let batch = try take(100, on: db)
            #expect(batch.jobs.count == 30)
            #expect(batch.last?.priority == 2)
            #expect(try count("select count(*) from courier.jobs where state = 'available' and run_at <= now()", on: db) == 0)
        }
    }

    /// A claim from a position past the highest waiting priority takes nothing; one from the
    /// start then takes what waits behind it. A paused queue yields nothing either way.
    @Test func aClaimFromPastTheHighestPriorityTakesNothingAndAPausedQueueNothingAtAll() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(4, dueInSeconds: -60, priorities: 2, on: db)
            let past = ClaimPosition(priority: 5, runAtMicroseconds: 0, id: 0)
            let after = try take(10, after: past, on: db)
            #expect(after.jobs.isEmpty)
            _ = try QueueSettingsTable.setPaused(queue: "default", true, on: db)
            for position in [nil, ClaimPosition(priority: 0, runAtMicroseconds: 0, id: 0)] {
                let paused = try take(10, after: position, on: db)
                #expect(paused.jobs.isEmpty)
            }
            _ = try QueueSettingsTable.setPaused(queue: "default", false, on: db)
            let fromStart = try take(10, on: db)
            #expect(fromStart.jobs.count == 4)
        }
    }

    /// A priority whose due jobs are all held back (a breaker not closed) is passed over for the
    /// next one within the same call.
    @Test func aClaimPassesOverAPriorityWhoseJobsAreAllHeldBack() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let blocked = "http://blocked.test:80"
            try insert(5, destination: blocked, dueInSeconds: -60, on: db)
            try db.execute(PostgresQuery(unsafeSQL: """
                update courier.jobs set priority = 0 where destination = $1
                """, binds: [blocked]))
            try insert(3, dueInSeconds: -60, on: db)
            try db.execute(PostgresQuery(unsafeSQL: """
                update courier.jobs set priority = 1 where destination <> $1
                """, binds: [blocked]))
            try db.execute(PostgresQuery(unsafeSQL: "select courier.breaker_pause($1::text, 3600000)", binds: [blocked]))
            let batch = try take(10, on: db)
            #expect(batch.jobs.count == 3)
            #expect(batch.jobs.allSatisfy { $0.destination != blocked })
        }
    }

    @Test func aClaimAfterAPositionLeavesWhatLandedBehindItToAClaimFromTheStart() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(10, dueInSeconds: -60, on: db)
            let first = try JobsTable.claim(queue: "default", limit: 5, worker: UUID(), leaseMilliseconds: lease, after: nil, on: db)
            let position = try #require(first.last)
            // A job lands behind the position: due earlier than anything taken.
            try insert(1, dueInSeconds: -3600, on: db)
            let after = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease,
                                            after: position, on: db)
            #expect(after.jobs.count == 5)
            let behind = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease,
                                             after: nil, on: db)
            #expect(behind.jobs.count == 1)
        }
    }

    @Test func aRetryAfterPausedBacklogIsHeldByTheKeeperAndThenCostsTheClaimNothing() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let paused = "http://paused.test:80"
            try insert(30_000, destination: paused, dueInSeconds: -60, on: db)
            try insert(5, dueInSeconds: -30, on: db)
            try db.execute(PostgresQuery(unsafeSQL: "select courier.breaker_pause($1::text, 3600000)", binds: [paused]))
            try db.simpleQuery("vacuum analyze courier.jobs")

            // Unheld, the paused destination's due jobs come first in the index: the claim passes
            // over them (that is what costs, until the keeper has held them) and still takes the
            // plain jobs behind them. (Filtered after the claim's range, they filled the range and
            // hid every other destination until all 30k were held.)
            let unheld = try claimBuffers(on: db)
            let behind = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(behind.count == 5 && behind.allSatisfy { $0.destination == "http://plain.test:80" })
            try insert(5, dueInSeconds: -30, on: db)

            while try JobsTable.trafficMaintain(batch: 2000, on: db) >= 2000 {}
            #expect(try count("select count(*)::bigint from courier.jobs where held_since is not null", on: db) == 30_000)
            // The versions the keeper left behind are gone once vacuumed (autovacuum, or the
            // first scan that passes them marks them dead).
            try db.simpleQuery("vacuum courier.jobs")
            let held = try claimBuffers(on: db)
            // 79 buffers with 0031's claim, 81 with 0036's (the highest waiting priority is
            // read up front, from the right end of the queue): nearly all of it is the update
            // of the 5 jobs taken. Thousands when the 30k jobs are not held (below).
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 140 since 0048.
            #expect(held < 200, "the claim touched \(held) buffers with 30k jobs held for Retry-After")
            #expect(unheld > 10 * held, "passing over 30k unheld jobs (\(unheld) buffers) costs what holding them saves (\(held))")
            let claimed = try JobsTable.claim(queue: "default", limit: 100, worker: UUID(), leaseMilliseconds: lease, on: db)
            #expect(claimed.count == 5)
            #expect(claimed.allSatisfy { $0.destination == "http://plain.test:80" })

            // The pause ends: the keeper releases them, in batches, and they are claimed again.
            try db.execute(PostgresQuery(unsafeSQL: "update courier.breakers set not_before = now() - interval '1 second' where destination = $1::text",
                                         binds: [paused]))
            while try JobsTable.trafficMaintain(batch: 2000, on: db) >= 2000 {}
            #expect(try count("select count(*)::bigint from courier.jobs where held_since is not null", on: db) == 0)
            #expect(try JobsTable.claim(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).count == 10)
        }
    }

    /// Migration 0032. Behind an open breaker every waiting job of the destination is already
    /// held, but the planner multiplies the columns' selectivities as if independent (half the
    /// jobs are that destination's, half are not held: a quarter expected to match) and
    /// chose a sequential scan for the keeper's "not yet held" batch, reading every job to
    /// find none, on every pass (1,511 buffers here without 0032's settings; 243k buffers and
    /// 3.2 s a pass with 10M jobs in the backlog bench).
    @Test func aKeeperPassOverAnOpenBreakerWhoseJobsAreAllHeldReadsNoneOfThem() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let open = "http://held.test:80"
            try insert(20_000, destination: open, dueInSeconds: -60, on: db)
            try db.simpleQuery("update courier.jobs set held_since = now()")
            try insert(20_000, destination: "http://later.test:80", dueInSeconds: 86_400, on: db)
            _ = try BreakersTable.force(destination: open, action: .open, actor: "test", on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")

            let pass = "select courier.traffic_maintain(2000)"
            _ = try explainBuffers(pass, [], on: db)   // the first pass in a session also compiles the function
            let buffers = try explainBuffers(pass, [], on: db)
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 150.
            #expect(buffers < 250, "a keeper pass with 20k jobs held and 20k scheduled touched \(buffers) buffers")
            #expect(try JobsTable.trafficMaintain(batch: 2000, on: db) == 0)
            #expect(try count("select count(*)::bigint from courier.jobs where held_since is not null", on: db) == 20_000)
        }
    }

    /// Migration 0035. The keeper's batches take one destination's waiting jobs. Their plans
    /// were made on statistics taken while 50 gated destinations held every waiting job, and
    /// then used after those jobs were gone and another destination's had arrived. The batch
    /// for a gated destination walked the whole runnable index, with the destination as a heap
    /// filter, on every pass: 114k buffers and 0.56 s here before 0035. The 30-minute soak
    /// after the traffic bench had one pass run for its whole length, in one transaction.
    /// Now each batch walks its destination's own index.
    @Test func aKeeperPassAfterTheGatedDestinationsBacklogIsGoneReadsNoneOfAnotherDestinations() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // The test cluster commits asynchronously; until a commit is flushed no scan may
            // mark the rows it deleted dead in the indexes (hint bits), so every pass would read
            // those entries again. Production's default is synchronous.
            try db.simpleQuery("set synchronous_commit = on")
            try db.execute("""
                insert into courier.destinations (destination, max_in_flight)
                select 'http://capped-' || g || '.test:80', 10 from generate_series(1, 50) g
                """)
            for destination in (1...50).map({ "http://capped-\($0).test:80" }) {
                try insert(2_000, destination: destination, dueInSeconds: -60, on: db)
            }
            while try JobsTable.trafficMaintain(batch: 20_000, on: db) >= 20_000 {}
            #expect(try count("select count(*)::bigint from courier.jobs where gated", on: db) == 100_000)
            try db.simpleQuery("analyze courier.jobs")
            try db.execute("delete from courier.jobs")
            try insert(50_000, destination: "http://busy.test:80", dueInSeconds: -60, on: db)

            let pass = "select courier.traffic_maintain(2000)"
            _ = try explainBuffers(pass, [], on: db)   // compiles the function, and marks the deleted entries dead
            let buffers = try explainBuffers(pass, [], on: db)
            // ~65 buffers per gated destination (3,253 measured); a walk of the runnable index is 2,000+ each.
            #expect(buffers < 10_000, "a keeper pass over 50 gated destinations without jobs touched \(buffers) buffers")
            #expect(try JobsTable.trafficMaintain(batch: 2000, on: db) == 0)
        }
    }

    /// A claim reads the destinations rows of the jobs it claimed, not the whole table: with
    /// 20,000 destinations a one-job claim touched every page of courier.destinations when
    /// it was a plain join (a hash of the table on every claim), ~380 more buffers than with none.
    @Test func aClaimReadsOnlyTheDestinationsOfTheJobsItClaims() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(1, dueInSeconds: -60, on: db)
            let alone = try claimBuffers(limit: 1, on: db)
            try db.execute(PostgresQuery(unsafeSQL: """
                insert into courier.destinations (destination, signing_secret)
                select 'https://d' || g || '.test:443', 'secret-' || g from generate_series(1, 20000) g
                union all select 'http://plain.test:80', 'plain-secret'
                """, binds: []))
            try db.execute("analyze courier.destinations")
            let among20k = try claimBuffers(limit: 1, on: db)
            #expect(among20k - alone < 40, "a one-job claim read \(among20k) buffers among 20,000 destinations, \(alone) with none")
            let claimed = try take(1, on: db).jobs
            #expect(claimed.map(\.destinationSigningSecret) == ["plain-secret"])
        }
    }

    /// Migration 0033. The spread claim takes a destination's due jobs one priority at a time:
    /// before, its take walked every job of the destination scheduled ahead whenever fewer
    /// than its limit were due (866 buffers here before 0033; 3,275 with 200k ahead).
    @Test func aSpreadClaimTouchesNoneOfADestinations50kJobsScheduledAhead() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try insert(50_000, destination: "http://later.test:80", dueInSeconds: 86_400, priorities: 3, on: db)
            try insert(100, destination: "http://busy.test:80", dueInSeconds: -60, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")

            let spread = "select * from courier.claim_spread('default', 10, 5, $1::uuid, 30000, null, $2::text[], 16)"
            let binds: [any PostgresEncodable] = [UUID(), ["http://busy.test:80"]]
            _ = try buffers(spread, binds, on: db)   // the first call in a session also plans the function's statements
            let spent = try buffers(spread, binds, on: db)
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 400 (the busy destination's 50k jobs scheduled ahead: thousands).
            #expect(spent < 600, "a spread claim past 50k jobs scheduled ahead touched \(spent) buffers")
            #expect(try JobsTable.claimSpread(queue: "default", limit: 10, perDestination: 5, after: nil, excluding: ["http://busy.test:80"],
                                              visit: 16, worker: UUID(), leaseMilliseconds: lease, on: db).jobs.isEmpty)
        }
    }

    /// Migration 0033. The gated claim probes a destination for a due job, and takes its due
    /// jobs, one priority at a time: before, each probe walked the destination's jobs
    /// scheduled ahead (1,649 buffers here before 0033; 2,439 with 200k ahead).
    @Test func aGatedClaimTouchesNoneOfItsDestinations50kJobsScheduledAhead() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let capped = "http://capped.test:80"
            try insert(50_000, destination: capped, dueInSeconds: 86_400, priorities: 3, on: db)
            _ = try DestinationsTable.merge(.init(destination: capped, maxInFlight: 100, slowStartMilliseconds: 0), on: db)
            while try JobsTable.trafficMaintain(batch: 20_000, on: db) >= 20_000 {}
            #expect(try count("select count(*)::bigint from courier.jobs where gated", on: db) == 50_000)
            try db.simpleQuery("vacuum analyze courier.jobs")

            let gated = "select * from courier.claim_gated('default', 10, $1::uuid, 30000)"
            _ = try buffers(gated, [UUID()], on: db)
            let spent = try buffers(gated, [UUID()], on: db)
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 140.
            #expect(spent < 250, "a gated claim past 50k jobs scheduled ahead touched \(spent) buffers")
            #expect(try JobsTable.claimGated(queue: "default", limit: 10, worker: UUID(), leaseMilliseconds: lease, on: db).isEmpty)
        }
    }

    @Test func aRetriedJobOfARetryAfterPausedDestinationWaitsHeld() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let paused = "http://paused.test:80"
            try insert(1, destination: paused, dueInSeconds: -60, on: db)
            let worker = UUID()
            let job = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: lease, on: db).first)
            try db.execute(PostgresQuery(unsafeSQL: "select courier.breaker_pause($1::text, 3600000)", binds: [paused]))
            try JobsTable.retry([.init(id: job.id, attempt: job.attempt, lease: job.lease, delayMilliseconds: 0, errorJSON: "{}")], worker: worker, on: db)
            #expect(try count("select count(*)::bigint from courier.jobs where held_since is not null", on: db) == 1)
        }
    }

    /// A repeatable-read transaction held open elsewhere: the versions of every job claimed
    /// since cannot be vacuumed, and a claim from the start of the queue walks them all. A
    /// claim from the last position walks none.
    @Test func underAHeldSnapshotAClaimFromThePositionSkipsTheDeadEntriesAFullClaimWalks() throws {
        try CourierTestDatabase.with { (database, db) throws in
            try insert(25_000, dueInSeconds: -60, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")
            let holder = try SnapshotHolder(url: database.url)

            let worker = UUID()
            var position: ClaimPosition?
            for _ in 0..<200 {
                position = try claimAndComplete(100, after: position, worker: worker, on: db).last
            }
            try db.simpleQuery("vacuum courier.jobs")
            // One job each, so the pages walked to reach it dominate (about 100 index and 600 heap pages).
            let full = try claimBuffers(limit: 1, on: db)
            let bounded = try claimBuffers(limit: 1, after: position, on: db)
            #expect(full > 400, "the full claim should walk the 20k dead entries (\(full) buffers)")
            #expect(bounded < 60, "the claim from the position touched \(bounded) buffers")
            try holder.release()
        }
    }

    /// Migration 0037. Until they are vacuumed, the entries of jobs claimed since lie at the
    /// head of the queue's range, and a claim from the start steps over them. It does so once:
    /// the highest waiting priority is read from the tail, the lowest only below it. 0036 read
    /// both from their ends, so an empty queue's poll walked them twice, and so did the claim of
    /// a job enqueued behind them (once to find its priority, once to take it).
    @Test func aClaimFromTheStartWalksTheDeadEntriesOfClaimedJobsOnce() throws {
        try CourierTestDatabase.with { (database, db) throws in
            try insert(20_000, dueInSeconds: -60, on: db)
            try db.simpleQuery("vacuum analyze courier.jobs")
            // Keeps the claimed jobs' versions from being pruned or vacuumed, as a burst not yet
            // vacuumed or a long transaction elsewhere would.
            let holder = try SnapshotHolder(url: database.url)
            let worker = UUID()
            var position: ClaimPosition?
            while let last = try claimAndComplete(1_000, after: position, worker: worker, on: db).last {
                position = last
            }
            // One walk over the dead entries: the lookup of the highest waiting priority of an empty queue.
            let walkSQL = """
                select c.priority from courier.jobs c
                where c.queue = 'default' and c.state = 'available' and c.held_since is null and not c.gated
                order by c.queue desc, c.priority desc limit 1
                """
            let indexWalk = PostgresQuery(unsafeSQL: "set local enable_seqscan = off")
            _ = try explainBuffers(walkSQL, [], prelude: indexWalk, on: db)
            let walk = try explainBuffers(walkSQL, [], prelude: indexWalk, on: db)
            #expect(walk > 300, "the dead entries should take a walk of hundreds of pages (\(walk) buffers)")

            let emptyPoll = try claimBuffers(limit: 1, on: db)
            try insert(1, dueInSeconds: -1, on: db)
            let oneJob = try claimBuffers(limit: 1, on: db)
            #expect(emptyPoll < walk * 3 / 2, "an empty queue's claim read \(emptyPoll) buffers, one walk is \(walk)")
            // Since 0048 the job may be in another slot of courier.jobs than the dead entries; then
            // their slot's index is walked from each end (the priority read, and the take), until
            // courier.reclaim_jobs truncates it: two walks, never more.
            #expect(oneJob < walk * 5 / 2, "the claim of one job behind the dead entries read \(oneJob) buffers, one walk is \(walk)")
            #expect(try take(10, on: db).jobs.count == 1)
            try holder.release()
        }
    }
}
