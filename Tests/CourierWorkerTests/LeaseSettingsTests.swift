import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The lease settings: worked out once from the configuration, and the same value in
/// every service that leases, renews, probes or rescues.
@Suite struct LeaseSettingsTests {
    static func configuration(_ change: (inout WorkerConfiguration) -> Void = { _ in }) -> WorkerConfiguration {
        var configuration = WorkerConfiguration(database: DatabaseConfiguration(connectionString: "host=127.0.0.1 port=1 dbname=none"))
        change(&configuration)
        return configuration
    }

    @Test func theDefaultsFollowTheLease() {
        let leases = LeaseSettings(Self.configuration())
        #expect(leases.lease == .seconds(30))
        #expect(leases.heartbeatInterval == .seconds(10))
        #expect(leases.fence == LeaseFence(lease: .seconds(30)) && leases.fence.trustedFor == .seconds(24))
        #expect(leases.probeLease == .seconds(30))
        #expect(leases.rescueInterval == .milliseconds(7500))
        #expect(leases.renewalTimeout == .seconds(10))
        #expect(leases.claimTimeout == .seconds(24))
        #expect(leases.leaseMilliseconds == 30_000 && leases.probeLeaseMilliseconds == 30_000)
    }

    /// A short lease: the timeouts and the rescue interval keep their floors of a second.
    @Test func aShortLeaseKeepsTheFloors() {
        let leases = LeaseSettings(Self.configuration { $0.lease = .seconds(1) })
        #expect(leases.heartbeatInterval == .seconds(1) / 3)
        #expect(leases.fence.trustedFor == .milliseconds(800))
        #expect(leases.rescueInterval == .seconds(1))
        #expect(leases.renewalTimeout == .seconds(1))
        #expect(leases.claimTimeout == .seconds(1))
    }

    /// The fence margin and the probe lease come from their own settings, not the lease.
    @Test func theMarginAndTheProbeLeaseAreTheirOwn() {
        let leases = LeaseSettings(Self.configuration {
            $0.lease = .seconds(60)
            $0.leaseFenceMargin = .seconds(5)
            $0.breakerPolicy.probeLease = .seconds(90)
        })
        #expect(leases.fence.margin == .seconds(5) && leases.claimTimeout == .seconds(55))
        #expect(leases.probeLease == .seconds(90) && leases.probeLeaseMilliseconds == 90_000)
        // Never shorter than the job lease (BreakerPolicy.probeLease(forJobLease:)).
        let shorter = LeaseSettings(Self.configuration {
            $0.lease = .seconds(60)
            $0.breakerPolicy.probeLease = .seconds(45)
        })
        #expect(shorter.probeLease == .seconds(60))
        #expect(leases.rescueInterval == .seconds(15))
    }

    /// Every service that needs a lease setting has the worker's one value.
    @Test func everyServiceHasTheWorkersSettings() {
        let configuration = Self.configuration {
            $0.lease = .seconds(12)
            $0.breakerPolicy.probeLease = .seconds(20)
        }
        let worker = Worker(configuration: configuration, httpHandler: NoopJobHandler(), logger: Logger(level: .error, sink: { _ in }))
        let leases = worker.leases
        #expect(leases == LeaseSettings(configuration))
        #expect(worker.stateSnapshot.fence == leases.fence)
        #expect(worker.heartbeater.configuration.leaseMilliseconds == 12_000)
        #expect(worker.heartbeater.configuration.probeLeaseMilliseconds == 20_000)
        #expect(worker.heartbeater.configuration.interval == .seconds(4))
        #expect(worker.claimer.configuration.leaseMilliseconds == 12_000)
        #expect(worker.prober.configuration.leaseMilliseconds == 12_000)
        #expect(worker.prober.configuration.probeLeaseMilliseconds == 20_000)
        #expect(worker.rescuer.configuration.interval == .seconds(3))
    }
}
