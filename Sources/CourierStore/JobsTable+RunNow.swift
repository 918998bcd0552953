import Foundation
import Postgres

extension JobsTable {
    /// Makes waiting jobs due now ("run now" on the dashboard): no attempt is used, a held
    /// job stays held by its breaker. Returns the ids that were waiting and changed, in id order.
    public static func runNow(ids: [Int64], on connection: PostgresConnection) throws -> [Int64] {
        let changed = try connection.query("""
            update courier.jobs set run_at = now()
            where id = any(\(ids)) and state = 'available' and run_at > now()
            returning queue
            """).rows.map { try $0.decode(0, as: String.self) }
        // Wake idle workers of those queues, as an enqueue does.
        for queue in Set(changed).sorted() { try connection.query("select pg_notify('courier_jobs', \(queue))") }
        let due = try connection.query("""
            select id from courier.jobs where id = any(\(ids)) and state = 'available' order by id
            """).rows.map { try $0.decode(0, as: Int64.self) }
        return due
    }
}
