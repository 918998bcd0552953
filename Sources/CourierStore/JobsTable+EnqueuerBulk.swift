import CourierCore
import Foundation
import Postgres

extension JobsTable {
    /// Whether this session may COPY into `courier.jobs` and read `courier.breakers` (the
    /// fast bulk paths): workers and operators may, an enqueuer (`courier_enqueue`) may not.
    static func canCopyJobs(on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            select has_table_privilege('courier.jobs', 'INSERT') and has_table_privilege('courier.breakers', 'SELECT')
            """).rows[0].decode(0, as: Bool.self)
    }

    /// The enqueuer's bulk path: one `courier.enqueue` call per request, all in the caller's
    /// transaction (so still all or nothing, with every rule of the function). Slower than
    /// COPY, and the enqueuer cannot see `courier.jobs`: a line whose `unique_key` an
    /// earlier line of the same file holds is counted as skipped, one whose key a job
    /// already in the queue holds cannot be told from a new job and is counted as enqueued.
    static func enqueueThroughFunction(_ requests: [EnqueueRequest], on tx: PostgresConnection,
                                       progress: ((Int) -> Void)?) throws -> BulkResult {
        var seen = Set<Int64>()
        var skipped = 0
        for (index, request) in requests.enumerated() {
            let id = try enqueue(request, on: tx)
            if !seen.insert(id).inserted { skipped += 1 }
            if (index + 1) % 1000 == 0 || index + 1 == requests.count { progress?(index + 1) }
        }
        return BulkResult(inserted: requests.count - skipped, skippedByUniqueKey: skipped)
    }
}
