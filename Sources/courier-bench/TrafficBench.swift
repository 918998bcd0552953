import CourierStore
import Foundation
import Postgres

/// The claim's cost with destination traffic control, against none, in the same run: one
/// connection drains `jobs` runnable noop jobs the way a worker's claimer does (the gated
/// claim first while policies exist, then the plain claim for the rest of the batch; each
/// batch acknowledged without the archive), first with no policies, then with
/// `destinations` capped destinations each holding `waiting` jobs at a full cap (so every
/// gated claim visits them all and takes nothing). Prints µs per claim round and jobs/s.
struct TrafficBench {
    let context: BenchContext
    let jobs: Int
    let destinations: Int
    let waiting: Int
    let batch = 100

    func run(rep: Int) throws {
        let db = try context.connect()
        defer { db.close() }
        for scenario in ["no_policies", "capped_backlog"] {
            try context.resetQueue(db)
            try db.simpleQuery("delete from courier.destinations")
            let gated = scenario == "capped_backlog"
            if gated { try fillCappedBacklog(db) }
            try context.insertJobs(db, count: jobs, queue: "default", url: nil)
            try db.simpleQuery("vacuum analyze courier.jobs")
            let worker = UUID()
            var rounds = 0
            var drained = 0
            var gatedNanos: UInt64 = 0
            let started = DispatchTime.now().uptimeNanoseconds
            while drained < jobs {
                var claimed: [ClaimedJob] = []
                if gated {
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    claimed = try JobsTable.claimGated(queue: "default", limit: batch, worker: worker, leaseMilliseconds: 60_000, on: db)
                    gatedNanos += DispatchTime.now().uptimeNanoseconds - t0
                }
                claimed += try JobsTable.claim(queue: "default", limit: batch - claimed.count, worker: worker,
                                               leaseMilliseconds: 60_000, on: db)
                rounds += 1
                guard !claimed.isEmpty else { throw BenchError("traffic: the claim found nothing with \(jobs - drained) jobs left") }
                try JobsTable.complete(claimed.map { .init(id: $0.id, attempt: $0.attempt, lease: $0.lease, status: nil, durationMilliseconds: 0) },
                                       worker: worker, archive: false, on: db)
                drained += claimed.count
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let perRound = seconds * 1e6 / Double(rounds)
            let gatedPerRound = Double(gatedNanos) / 1e3 / Double(rounds)
            let rate = Double(jobs) / seconds
            print(String(format: "traffic %@ rep %d: %d jobs in %.2f s = %.0f jobs/s; %.0f µs per claim round (gated claim %.0f µs); %d capped destinations x %d waiting",
                         scenario, rep, jobs, seconds, rate, perRound, gatedPerRound, gated ? destinations : 0, gated ? waiting : 0))
            context.log.record("traffic", ["scenario": scenario, "rep": rep, "jobs": jobs, "seconds": seconds, "jobs_per_second": rate,
                                           "us_per_claim_round": perRound, "us_gated_claim": gatedPerRound,
                                           "capped_destinations": gated ? destinations : 0, "waiting_per_destination": gated ? waiting : 0])
        }
    }

    /// `destinations` destinations with a cap of 1, one job of each running (the cap full)
    /// and `waiting` more waiting, gated by the keeper's bounded passes.
    private func fillCappedBacklog(_ db: PostgresConnection) throws {
        try db.execute(PostgresQuery(unsafeSQL: """
            insert into courier.jobs (kind, destination, args, queue)
            select 'noop', 'job:capped-' || d, '{}', 'default'
            from generate_series(1, $1::int) d, generate_series(1, $2::int)
            """, binds: [destinations, waiting + 1]))
        for d in 1...destinations {
            _ = try DestinationsTable.merge(.init(destination: "job:capped-\(d)", maxInFlight: 1, slowStartMilliseconds: 0), on: db)
        }
        try db.execute("""
            update courier.jobs set state = 'running', attempt = 1, leased_by = gen_random_uuid(),
                lease_expires_at = now() + interval '1 hour', attempted_at = now()
            where id in (select min(id) from courier.jobs where destination like 'job:capped-%' group by destination)
            """)
        while try JobsTable.trafficMaintain(batch: 20_000, on: db) >= 20_000 {}
    }
}
