import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres

/// What a backlog for an open destination costs a healthy one: the claim statement's
/// time with no backlog, behind a backlog whose breaker opened by evidence (its jobs
/// are held: marked held_since, out of the runnable index) and behind one opened by an operator
/// (not held: the claim's anti-join must skip every row).
struct BacklogProbe {
    struct Result: Sendable {
        var backlog: Int
        var baseline: Duration
        var held: Duration
        /// The same after `vacuum analyze` (the planner then sees the held rows' run_at).
        var heldAnalyzed: Duration
        var notHeld: Duration
        /// How long the report that opened the breaker took (it holds the backlog).
        var holdStatement: Duration
    }

    var backlog: Int
    var options: SimOptions

    func run() throws -> Result {
        let database = try TestDatabase.create(label: "breaker_sim_backlog", template: nil,
                                               environment: [TestDatabase.environmentVariable: options.adminURL ?? ""])
        defer { try? database.drop() }
        let db = try database.connect(applicationName: "courier-breaker-sim")
        defer { db.close() }
        try Migrator.migrate(db)
        let dead = "https://dead.example.com:443"
        _ = try JobsTable.enqueueMany((0..<200).map { EnqueueRequest(url: "https://healthy.example.com/x?job=\($0)") }, on: db)
        try db.simpleQuery("analyze courier.jobs")
        let baseline = try medianClaim(db)

        // The backlog sorts before the healthy jobs (earlier run_at), as a real one would.
        let earlier = Date().addingTimeInterval(-3600)
        _ = try JobsTable.enqueueMany((0..<backlog).map { i in
            var r = EnqueueRequest(url: "https://dead.example.com/x?job=\(i)")
            r.runAt = earlier
            return r
        }, on: db)
        try db.simpleQuery("analyze courier.jobs")

        try BreakersTable.force(destination: dead, action: .open, on: db)
        let notHeld = try medianClaim(db)
        try BreakersTable.force(destination: dead, action: .reset, on: db)

        let policy = BreakersTable.ReportPolicy(failureThreshold: 5, windowMilliseconds: 60_000, minimumVolume: 20, failureRate: 0.5,
                                                cooldownMilliseconds: 600_000, cooldownMaxMilliseconds: 600_000,
                                                probeLeaseMilliseconds: 30_000)
        let holdStart = ContinuousClock.now
        try BreakersTable.report(destination: dead, successes: 0, failures: 5, trailingFailures: 5, worker: "sim", policy: policy, on: db)
        let holdStatement = ContinuousClock.now - holdStart
        let held = try medianClaim(db)
        try db.simpleQuery("vacuum analyze courier.jobs")
        let heldAnalyzed = try medianClaim(db)
        return Result(backlog: backlog, baseline: baseline, held: held, heldAnalyzed: heldAnalyzed, notHeld: notHeld,
                      holdStatement: holdStatement)
    }

    /// The median of 21 claims of 32 jobs, each rolled back so the queue stays as it is.
    func medianClaim(_ db: PostgresConnection) throws -> Duration {
        var times: [Duration] = []
        for _ in 0..<21 {
            try db.simpleQuery("begin")
            let start = ContinuousClock.now
            let jobs = try JobsTable.claim(queue: "default", limit: 32, worker: UUID(), leaseMilliseconds: 30_000, on: db)
            times.append(ContinuousClock.now - start)
            try db.simpleQuery("rollback")
            guard jobs.count == 32, jobs.allSatisfy({ $0.destination != "https://dead.example.com:443" }) else {
                throw SimError("the claim returned \(jobs.count) jobs, some for the open destination")
            }
        }
        return times.sorted()[times.count / 2]
    }
}

struct SimError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
