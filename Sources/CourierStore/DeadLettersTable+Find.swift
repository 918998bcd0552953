import CourierCore
import Foundation
import Postgres

extension DeadLettersTable {
    /// How many dead letters match `filter`, ignoring its limit, counted up to `cap`
    /// (at most `cap + 1` rows are read, never the whole table).
    public static func count(_ filter: Filter, cap: Int = JobsTable.listCountCap,
                             on connection: PostgresConnection) throws -> JobsTable.CappedCount {
        var query = PostgresQuery(unsafeSQL: "select count(*)::bigint from (select 1 from courier.dead_letters ")
        query.append(whereClause(filter))
        query.append(" limit \(cap + 1)) s")
        return JobsTable.CappedCount(count: try connection.query(query).rows[0].decode(0, as: Int.self), cap: cap)
    }

    /// The newest dead letter of the job with `jobID` (the id `jobctl list` and `show` print).
    public static func get(jobID: Int64, on connection: PostgresConnection) throws -> Letter? {
        var query = PostgresQuery(unsafeSQL: "select \(columns) from courier.dead_letters ")
        query.append("where job_id = \(jobID) order by id desc limit 1")
        return try connection.query(query).rows.first.map(decode)
    }

    /// Every reason but `cancelled`: what `dead replay --all` takes unless told otherwise.
    public static let reasonsReplayedByAll = DeadLetterReason.allCases.filter { $0 != .cancelled }.map(\.rawValue)
}
