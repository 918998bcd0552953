@testable import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 12, the soak's stall: the worker's writes about the jobs it holds (migration 0034)
/// stay primary key probes when the statistics of `courier.jobs` say the table is empty
/// while it is full. Every assertion is on buffers (EXPLAIN (ANALYZE, BUFFERS)), never on time.
@Suite(.serialized) struct AcknowledgementPlanTests {
    let worker = UUID()
    /// The batch each statement is measured with.
    let batch = 50

    /// The success acknowledgement as 0001-0033 sent it, for contrast: on these statistics
    /// its generic plan walks the whole primary key.
    static let acknowledgementOf0033 = """
        delete from courier.jobs j
        using unnest($1::bigint[], $2::int[], $3::int[], $4::int[]) as a(id, attempt, status, duration_ms)
        where j.id = a.id and j.attempt = a.attempt and j.leased_by = $5
        returning j.id
        """

    /// Statistics taken while `courier.jobs` held no live row (100k deleted versions), then
    /// `running` jobs leased to `worker` and `waiting` available ones, not analyzed since:
    /// the state of the soak's stall. Returns the `batch` highest running ids (the far end
    /// of the primary key), in order.
    func staleStatistics(running: Int, waiting: Int = 0, on db: PostgresConnection) throws -> [Int64] {
        // Autovacuum may not visit this database's jobs table mid-test: an ANALYZE would
        // refresh the statistics this test needs stale.
        try JobsPartitions.setAutovacuum(false, on: db)
        try db.execute("""
            insert into courier.jobs (queue, destination, url)
            select 'default', 'http://plain.test:80', 'http://x.test/' from generate_series(1, 100000)
            """)
        try db.execute("delete from courier.jobs")
        try db.simpleQuery("analyze courier.jobs")
        try db.execute(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (queue, destination, url)
            select 'default', 'http://plain.test:80', 'http://x.test/' from generate_series(1, $1::int)
            """, binds: [waiting]))
        try db.execute(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (queue, destination, url, state, attempt, leased_by, lease_expires_at, attempted_at)
            select 'default', 'http://plain.test:80', 'http://x.test/', 'running', 1, $1::uuid, now() + interval '1 hour', now()
            from generate_series(1, $2::int)
            """, binds: [worker, running]))
        let reltuples = try db.query(PostgresQuery(unsafeSQL: "select sum(greatest(reltuples, 0))::bigint from pg_class where oid in (\(JobsPartitions.relids))"))
            .rows[0].decode(0, as: Int64.self)
        #expect(reltuples == 0, "the statistics must say the table is empty")
        return try db.query(PostgresQuery(unsafeSQL: """
            select id from (select id from courier.jobs where state = 'running' order by id desc limit $1) s order by id
            """, binds: [batch])).rows.map { try $0.decode(0, as: Int64.self) }
    }

    /// Buffers of the second run in the session (the first compiles the function).
    func buffers(_ sql: String, _ binds: [any PostgresEncodable], prelude: PostgresQuery? = nil,
                 on db: PostgresConnection) throws -> Int {
        _ = try explainBuffers(sql, binds, prelude: prelude, on: db)
        return try explainBuffers(sql, binds, prelude: prelude, on: db)
    }

    @Test func everyAcknowledgementProbesItsBatchWhateverTheStatisticsSay() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let ids = try staleStatistics(running: 100_000, on: db)
            let ones = [Int](repeating: 1, count: ids.count)
            let texts = [String](repeating: #"{"class":"test"}"#, count: ids.count)

            // The contrast: the old statement's generic plan reads the whole table.
            // (In a function of this session, so its plan is the generic one the worker's
            // prepared statement came to.)
            try db.simpleQuery("""
                create function pg_temp.acknowledgement_of_0033(bigint[], int[], int[], int[], uuid) returns setof bigint
                language plpgsql set plan_cache_mode = force_generic_plan as $$ begin return query

                """ + Self.acknowledgementOf0033 + "; end $$")
            let old = try buffers("select pg_temp.acknowledgement_of_0033($1::bigint[], $2::int[], $3::int[], $4::int[], $5::uuid)",
                                  [ids, ones, [Int](repeating: 200, count: ids.count), ones, worker], on: db)
            // Every heap page that holds one of the 100k live rows (~3,100 here): the old plan reads
            // them all, and the index besides. Whether it also reads the deleted versions' pages
            // varied between full runs of the suite with autovacuum off (6,751 buffers in all, or
            // 3,775), so the check is against the live rows' pages.
            let livePages = try db.query("select count(distinct (ctid::text::point)[0])::bigint from courier.jobs")
                .rows[0].decode(0, as: Int64.self)
            #expect(livePages > 2_000, "the table should hold 100k live rows on thousands of pages, not \(livePages)")
            #expect(old > livePages, "the old acknowledgement read \(old) buffers for \(livePages) pages of live rows: these statistics no longer mislead it")

            // Each probe is a few index pages and the row, then the row's write and its index
            // entries: 5-19 buffers per job measured (the old statement: 3.8k-6.7k, the whole table);
            // since 0048 each id is probed in the five partitions of courier.jobs (an empty one's
            // index is a page): up to 35.
            let bound = 40 * batch
            let statements: [(String, String, [any PostgresEncodable])] = [
                ("success", JobsTable.completeSQL, [ids, ones, [Int](repeating: 200, count: ids.count), ones, worker, true]),
                ("success without archive", JobsTable.completeSQL,
                 [ids, ones, [Int](repeating: -1, count: ids.count), ones, worker, false]),
                ("renewal", "select * from courier.renew_leases($1::bigint[], $2::int[], $3::uuid, $4::int)",
                 [ids, ones, worker, 30_000]),
                ("hand-back", "select courier.hand_back_jobs($1::bigint[], $2::int[], $3::uuid, $4::bigint)",
                 [ids, ones, worker, Int64(0)]),
                ("retry", "select courier.retry_jobs($1::bigint[], $2::int[], $3::bigint[], $4::text[], $5::boolean[], $6::uuid)",
                 [ids, ones, [Int64](repeating: 1_000, count: ids.count), texts, [Bool](repeating: true, count: ids.count), worker]),
                ("dead letter",
                 "select courier.dead_letter_jobs($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::int[], $7::uuid)",
                 [ids, ones, [String](repeating: "permanent", count: ids.count), texts,
                  [String](repeating: "client", count: ids.count), [Int](repeating: 404, count: ids.count), worker]),
            ]
            for (name, sql, binds) in statements {
                let touched = try buffers(sql, binds, on: db)
                #expect(touched < bound, "\(name): \(touched) buffers for \(ids.count) jobs (the old acknowledgement: \(old))")
            }
        }
    }

    @Test func theRescueProbesTheExpiredLeasesWhateverTheStatisticsSay() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // A backlog of 50k waiting jobs and 1,000 running, the last `batch` of them expired.
            let expired = try staleStatistics(running: 1_000, waiting: 50_000, on: db)
            try TestRows(db).expireLeases(.ids(expired), ago: .seconds(60))
            let rescue = JobsTable.rescueStatement(limit: 1_000, now: nil)
            let withSettings = try buffers(rescue.sql, rescue.binds, prelude: JobsTable.rescueLockAndSettings, on: db)
            // It reads the running jobs to find the expired ones (no index orders leases), then
            // probes those: a few buffers per running job, nothing per waiting one.
            #expect(withSettings < 2 * 1_000 + 20 * batch, "the rescue read \(withSettings) buffers")
        }
    }

    /// The settings that keep those plans are the functions' own, so a session (or a pooled
    /// server connection) with other settings cannot change them.
    @Test func theAcknowledgementFunctionsCarryTheirPlannerSettings() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let rows = try db.query("""
                select p.proname, array_to_string(p.proconfig, ',')
                from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                where n.nspname = 'courier'
                  and p.proname in ('complete_jobs', 'renew_leases', 'hand_back_jobs', 'retry_jobs', 'dead_letter_jobs')
                order by p.proname
                """).rows
            // Each in two overloads: fenced by lease token (0039) and by attempt (0034, kept for
            // workers of the previous release during a rolling update).
            #expect(rows.count == 10)
            for row in rows {
                let name = try row.decode(0, as: String.self)
                let config = try row.decode(1, as: String.self).split(separator: ",").map(String.init)
                for setting in ["plan_cache_mode=force_generic_plan", "enable_seqscan=off", "enable_bitmapscan=off",
                                "enable_nestloop=off", "enable_mergejoin=off", "jit=off"] {
                    #expect(config.contains(setting), "\(name) lacks \(setting): \(config)")
                }
            }
        }
    }
}
