import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl cancel`'s statements under the races and sizes production brings.
@Suite struct CancelTests {
    let worker = UUID()

    @Test func aJobThatMovesFromRunningToWaitingMeanwhileIsCancelledNotMissed() async throws {
        try await CourierTestDatabase.with { database, db in
            let id = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/x"), on: db)
            let job = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db).first)
            // The worker's retry is written but not yet committed when the operator cancels.
            let ack = try PostgresConnection.connect(DatabaseConfiguration(connectionString: database.url))
            defer { ack.close() }
            try ack.simpleQuery("begin")
            #expect(try JobsTable.retry([.init(id: id, attempt: job.attempt, lease: job.lease, delayMilliseconds: 0, errorJSON: "{}")],
                                        worker: worker, on: ack) == [id])
            let operatorConnection = try PostgresConnection.connect(DatabaseConfiguration(connectionString: database.url))
            defer { operatorConnection.close() }
            let operatorPID = operatorConnection.backendPID
            let cancel = Task.detached { try JobsTable.cancel(ids: [id], on: operatorConnection) }
            // Wait until the cancel is blocked on the row the retry holds, then let the retry commit.
            let waiting = try await eventually {
                try db.query("select count(*)::bigint from pg_stat_activity where pid = \(operatorPID) and wait_event_type = 'Lock'")
                    .rows[0].decode(0, as: Int.self) == 1
            }
            #expect(waiting)
            try ack.simpleQuery("commit")
            let outcomes = try await cancel.value
            #expect(outcomes.map(\.outcome) == [.cancelled], "the job was waiting by the time the cancel could look at it")
            #expect(try JobsTable.get(id: id, on: db)?.deadReason == "cancelled")
        }
    }

    @Test func cancellingAThousandRunningJobsSucceeds() throws {
        try CourierTestDatabase.with { _, db in
            // Ids of production size (8 digits): a thousand of them no longer fit one notification's 8,000 bytes.
            try db.simpleQuery("alter table courier.jobs alter column id restart with 10000000")
            var ids: [Int64] = []
            for index in 0..<1000 {
                ids.append(try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/\(index)"), on: db))
            }
            var claimed = 0
            while claimed < ids.count {
                claimed += try JobsTable.claim(queue: "default", limit: 500, worker: worker, leaseMilliseconds: 30_000, on: db).count
            }
            let outcomes = try JobsTable.cancel(ids: ids, on: db)
            #expect(outcomes.count == 1000)
            #expect(outcomes.allSatisfy { $0.outcome == .cancelRequested })
            #expect(Set(try JobsTable.cancelRequested(worker: worker, on: db)) == Set(ids))
        }
    }
}
