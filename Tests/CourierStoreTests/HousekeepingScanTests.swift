import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Migration 0038: what every worker's housekeeping reads each second (the traffic keeper,
/// the prober, the held-back list) with a destination table the size a webhook sender has,
/// one row per customer endpoint. Assertions are on buffers (EXPLAIN (ANALYZE, BUFFERS)),
/// never on time.
@Suite(.serialized) struct HousekeepingScanTests {
    /// The planner settings `courier.traffic_maintain` runs under, for the contrasts below.
    static let keeperSettings = PostgresQuery(unsafeSQL: """
        select set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
               set_config('enable_sort', 'off', true)
        """)

    /// The keeper's hold step before 0038 looked its destinations up with this (sorts off).
    static let holdStepOf0035 = """
        select b.destination from courier.breakers b
        where b.state <> 'closed' or b.not_before > now() order by b.destination
        """

    /// ... and its gate step with this.
    static let gateStepOf0035 = "select d.destination from courier.destinations d where d.gated order by d.destination"

    /// The held-back list before 0038.
    static let heldBackOf0031 = """
        select b.destination from courier.breakers b where courier.holds_back(b)
        union
        select d.destination from courier.destinations d where d.paused
        order by 1
        limit $1
        """

    func names(_ sql: String, on db: PostgresConnection) throws -> [String] {
        try db.query(PostgresQuery(unsafeSQL: sql)).rows.map { try $0.decode(0, as: String.self) }
    }

    @Test func theHoldingBackSetIsHoldsBacksRuleRowByRow() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // Every state with every kind of Retry-After pause: none, over, in force.
            try db.execute("""
                insert into courier.breakers (destination, state, open_until, not_before)
                select 'http://' || s || '-' || coalesce(n, 'none') || '.test:80', s,
                       case when s <> 'closed' then now() + interval '1 minute' end,
                       case n when 'over' then now() - interval '1 minute' when 'in-force' then now() + interval '1 minute' end
                from unnest(array['closed', 'open', 'half_open']) s, unnest(array[null, 'over', 'in-force']) n
                """)
            let byRule = try names("select b.destination from courier.breakers b where courier.holds_back(b) order by 1", on: db)
            let bySet = try names("select destination from courier.breakers_holding_back() order by 1", on: db)
            #expect(bySet == byRule)
            #expect(byRule.count == 7)
            #expect(!byRule.contains("http://closed-none.test:80") && !byRule.contains("http://closed-over.test:80"))
        }
    }

    @Test func housekeepingReadsOnlyWhatHoldsBackAmong50kDestinations() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // 50k endpoints with a signing secret and a closed breaker each (every fifth paused
            // by a Retry-After long over), one open breaker past its cooldown, one Retry-After in
            // force, one destination paused by an operator, one with a concurrency cap.
            try db.execute("""
                insert into courier.destinations (destination, signing_secret)
                select 'http://h' || i || '.test:80', 'secret' || (i % 10) from generate_series(1, 50000) i
                """)
            try db.execute("""
                insert into courier.breakers (destination, not_before)
                select 'http://h' || i || '.test:80', case when i % 5 = 0 then now() - interval '1 hour' end
                from generate_series(1, 50000) i
                """)
            let open = "http://h7.test:80", retryAfter = "http://h8.test:80", paused = "http://h9.test:80", capped = "http://h11.test:80"
            try db.execute(PostgresQuery(unsafeSQL: """
                update courier.breakers set state = 'open', open_until = now() - interval '1 second' where destination = $1::text
                """, binds: [open]))
            try db.execute(PostgresQuery(unsafeSQL: "update courier.breakers set not_before = now() + interval '1 hour' where destination = $1::text",
                                         binds: [retryAfter]))
            try db.execute(PostgresQuery(unsafeSQL: "update courier.destinations set paused = true where destination = $1::text", binds: [paused]))
            try db.execute(PostgresQuery(unsafeSQL: "update courier.destinations set max_in_flight = 5 where destination = $1::text", binds: [capped]))
            try db.execute(PostgresQuery(unsafeSQL: """
                insert into courier.jobs (queue, destination, url)
                select 'default', d, 'http://x.test/' from unnest($1::text[]) d, generate_series(1, 3)
                """, binds: [[open, retryAfter, paused, capped, "http://h12.test:80"]]))
            try db.simpleQuery("vacuum analyze courier.breakers, courier.destinations, courier.jobs")

            // What each read answers.
            #expect(try BreakersTable.heldBack(limit: 100, on: db) == [open, retryAfter, paused].sorted())
            #expect(try BreakersTable.dueForProbe(queues: ["default"], on: db) == [open])
            #expect(try BreakersTable.dueForProbe(queues: ["other"], on: db) == [])
            _ = try JobsTable.trafficMaintain(batch: 2000, on: db)
            #expect(try count("select count(*)::bigint from courier.jobs where held_since is not null", on: db) == 6)
            #expect(try count("select count(*)::bigint from courier.jobs where gated", on: db) == 6)

            // What each read costs: a few pages, where the statements before 0038 walked a
            // primary key of 50k entries (about 10k pages each here).
            let keeper = try explainBuffers("select courier.traffic_maintain($1::int)", [2000], on: db)
            let probe = try explainBuffers(BreakersTable.dueForProbeSQL, [["default"]], on: db)
            let held = try explainBuffers(BreakersTable.heldBackSQL, [100], on: db)
            // Since 0048 courier.jobs is five partitions, and each descent visits every one's index (an empty one's metapage): about 500.
            #expect(keeper < 700, "a keeper pass read \(keeper) buffers")
            #expect(probe < 30, "the due-probe read touched \(probe) buffers")
            #expect(held < 30, "the held-back read touched \(held) buffers")

            let holdBefore = try explainBuffers(Self.holdStepOf0035, [], prelude: Self.keeperSettings, on: db)
            let gateBefore = try explainBuffers(Self.gateStepOf0035, [], prelude: Self.keeperSettings, on: db)
            let heldBefore = try explainBuffers(Self.heldBackOf0031, [100], on: db)
            #expect(holdBefore > 2_000 && gateBefore > 2_000, "0035's steps read \(holdBefore) and \(gateBefore) buffers")
            #expect(heldBefore > 20 * held, "the held-back read before 0038 touched \(heldBefore) buffers, now \(held)")
        }
    }
}
