import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// Issue 40: the half-open probe lease is at least the job lease (`--lease`). A probe is a job
/// whose request the worker keeps sending until its lease fence aborts it, shortly before the
/// job lease could expire; a probe lease that expired first would let a second worker probe
/// while the first still sends (DESIGN.md invariant 4).
@Suite struct ProbeLeaseTests {
    func configuration(_ url: String = "postgresql:///none", lease: Duration) -> WorkerConfiguration {
        var c = WorkerConfiguration(database: DatabaseConfiguration(connectionString: url))
        c.lease = lease
        return c
    }

    func session(_ database: TestDatabase) -> StoreSession {
        StoreSession(configuration: DatabaseConfiguration(connectionString: database.url), pause: { _ in })
    }

    @Test func theProbeLeaseIsTheLongerOfItsOwnAndTheJobLease() {
        let policy = BreakerPolicy()
        #expect(policy.probeLease(forJobLease: .seconds(10)) == .seconds(30))
        #expect(policy.probeLease(forJobLease: .seconds(30)) == .seconds(30))
        #expect(policy.probeLease(forJobLease: .seconds(600)) == .seconds(600))
        #expect(configuration(lease: .seconds(10)).probeLease == .seconds(30))
        #expect(configuration(lease: .seconds(120)).probeLease == .seconds(120))
    }

    @Test func theServicesTakeAndRenewTheProbeLeaseOfALongJobLease() {
        let c = configuration(lease: .seconds(120))
        let registration = WorkersTable.Registration(id: UUID(), host: "test", pid: 1, queues: ["default"], concurrency: 1,
                                                     version: "test", heartbeatIntervalMilliseconds: 10_000)
        #expect(Prober.Configuration(c, leases: LeaseSettings(c), worker: UUID()).probeLeaseMilliseconds == 120_000)
        #expect(Heartbeater.Configuration(leases: LeaseSettings(c), registration: registration).probeLeaseMilliseconds == 120_000)
        // The default lease keeps the default probe lease.
        #expect(Prober.Configuration(configuration(lease: .seconds(30)), leases: LeaseSettings(configuration(lease: .seconds(30))), worker: UUID()).probeLeaseMilliseconds == 30_000)
    }

    /// Opens `destination`'s breaker with one waiting job, its cooldown already over, so a probe is due at once.
    func openBreaker(_ destination: String, on db: PostgresConnection, policy: BreakerPolicy) throws {
        _ = try JobsTable.enqueue(EnqueueRequest(url: destination + "/probe"), on: db)
        var report = policy.reportPolicy
        report.cooldownMilliseconds = 1
        _ = try BreakersTable.report(destination: destination, successes: 0, failures: policy.failureThreshold,
                                     trailingFailures: policy.failureThreshold, worker: "test", policy: report, on: db)
        try TestRows(db).elapseCooldown(destination)
    }

    /// Seconds left on the breaker's probe lease and on the probe job's lease.
    func leasesLeft(_ destination: String, on db: PostgresConnection) throws -> (probe: Double, job: Double) {
        let row = try db.query("""
            select extract(epoch from b.probe_lease_until - now())::float8,
                   (select extract(epoch from j.lease_expires_at - now())::float8 from courier.jobs j
                    where j.destination = b.destination and j.state = 'running')
            from courier.breakers b where b.destination = \(destination)
            """).rows[0]
        return (try row.decode(0, as: Double.self), try row.decode(1, as: Double.self))
    }

    @Test func aWonProbeAndItsRenewalsOutliveTheProbesJobLease() throws {
        try CourierTestDatabase.with { database, db in
            let c = configuration(database.url, lease: .seconds(120))
            let destination = "http://127.0.0.1:9"
            try openBreaker(destination, on: db, policy: c.breakerPolicy)
            let worker = UUID()
            let intake = ProbeIntake()
            let prober = Prober(configuration: .init(c, leases: LeaseSettings(c), worker: worker), session: session(database), intake: intake,
                                logger: Logger(level: .error, sink: { _ in }))
            _ = prober.runOnce(now: .now)
            let probe = try #require(intake.probes.first, "the prober won the probe")
            let won = try leasesLeft(destination, on: db)
            #expect(won.probe >= won.job - 0.5, "probe lease \(won.probe) s, job lease \(won.job) s: the probe lease must not end first")
            #expect(won.probe > 100)

            // The heartbeater renews both in one round: the probe lease still ends last.
            try db.simpleQuery("update courier.breakers set probe_lease_until = now() + interval '1 second'")
            let holder = FakeHolder()
            holder.held = [probe.jobID]
            holder.probes = [(destination, probe.generation)]
            let registration = WorkersTable.Registration(id: worker, host: "test", pid: 1, queues: ["default"], concurrency: 1,
                                                         version: "test", heartbeatIntervalMilliseconds: 10_000)
            let heartbeater = Heartbeater(configuration: .init(leases: LeaseSettings(c), registration: registration), session: session(database), holder: holder)
            _ = heartbeater.runOnce(now: .now)
            let renewed = try leasesLeft(destination, on: db)
            #expect(renewed.probe >= renewed.job - 0.5, "probe lease \(renewed.probe) s, job lease \(renewed.job) s after a renewal")
            #expect(renewed.probe > 100)
            heartbeater.finish()
            prober.finish()
        }
    }
}

/// A worker's intake with room for one job, recording the probes it was handed.
final class ProbeIntake: JobIntake, @unchecked Sendable {
    private let lock = NSLock()
    private var accepted: [(jobID: Int64, generation: Int64)] = []
    var probes: [(jobID: Int64, generation: Int64)] { lock.withLock { accepted } }
    var freeSlots: Int { lock.withLock { accepted.isEmpty ? 1 : 0 } }
    var heldCount: Int { lock.withLock { accepted.count } }
    var slots: (free: Int, held: Int) { (freeSlots, heldCount) }
    var busiestDestination: (destination: String, count: Int)? { nil }
    var heldLeases: [WorkerStateMachine.Lease] { [] }
    func handBackUnknown(_ leases: [WorkerStateMachine.Lease]) {}
    func accept(_ jobs: [ClaimedJob], probeGeneration: Int64?, provenAt: ContinuousClock.Instant) {
        guard let probeGeneration else { return }
        lock.withLock { accepted += jobs.map { ($0.id, probeGeneration) } }
    }
}
