import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The acknowledgements name jobs by id, and give the primary key those ids as a condition
/// (`JobsTable.successDeleteSQL`): joined to `unnest` alone, the soak's generic plan, made
/// after an ANALYZE that found a mostly dead table, walked the whole primary key per
/// acknowledgement (300-460 ms each). The generic plan is checked, with statistics that
/// say the table is empty.
struct IdConditionPlanTests {
    @Test(arguments: [JobsTable.completeSQL, JobsTable.completeWithoutArchiveSQL])
    func anAcknowledgementProbesThePrimaryKeyWithItsIds(_ sql: String) throws {
        try CourierTestDatabase.with { (_, db) throws in
            try db.execute("""
                insert into courier.jobs (queue, run_at, destination, url)
                select 'default', now(), 'http://a.test:80', 'http://x.test/' from generate_series(1, 20000)
                """)
            try db.simpleQuery("delete from courier.jobs")
            try db.simpleQuery("analyze courier.jobs")
            try db.simpleQuery("set plan_cache_mode = force_generic_plan")
            try db.simpleQuery("prepare ack(bigint[], int[], int[], int[], uuid) as " + sql)
            let plan = try db.query("""
                explain execute ack('{1}', '{1}', '{200}', '{1}', '00000000-0000-0000-0000-000000000001')
                """).rows.map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
            #expect(plan.contains("jobs_pkey"), "\(plan)")
            #expect(plan.contains("Index Cond: (id = ANY ($1))") || plan.contains("Recheck Cond: (id = ANY ($1))"), "\(plan)")
        }
    }
}
