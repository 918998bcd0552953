/// A worker's lease-related settings, worked out once from its ``WorkerConfiguration``
/// (by `Worker.init`) and handed to every service that leases, renews, probes or rescues,
/// so no two services can disagree on a lease length, an interval or a timeout.
struct LeaseSettings: Sendable, Equatable {
    /// How long the database grants a job lease for (`--lease`).
    let lease: Duration
    /// How often leases and the registration are renewed (``WorkerConfiguration/heartbeatInterval``).
    let heartbeatInterval: Duration
    /// When the worker stops trusting a lease it could not renew (the lease and `--lease-fence-margin`).
    let fence: LeaseFence
    /// How long a won half-open probe is held before another worker may take it.
    let probeLease: Duration
    /// How often expired leases are rescued: a quarter of the lease, between 1 s and 15 s.
    let rescueInterval: Duration
    /// How long a renewal may wait for its answer before it is retried on a fresh connection:
    /// the heartbeat interval, at least 1 s.
    let renewalTimeout: Duration
    /// How long a claim may wait for its answer: a claim answered after its leases stopped
    /// being trusted is handed back. The fence's trust, at least 1 s.
    let claimTimeout: Duration

    init(_ c: WorkerConfiguration) {
        lease = c.lease
        heartbeatInterval = c.heartbeatInterval
        fence = LeaseFence(lease: c.lease, margin: c.leaseFenceMargin)
        // At least the job lease (``BreakerPolicy/probeLease(forJobLease:)``): a probe runs until
        // the lease fence aborts it, so its probe lease must outlast the job lease.
        probeLease = c.probeLease
        rescueInterval = max(.seconds(1), min(c.lease / 4, .seconds(15)))
        renewalTimeout = max(heartbeatInterval, .seconds(1))
        claimTimeout = max(fence.trustedFor, .seconds(1))
    }

    /// ``lease`` as the lease statements take it.
    var leaseMilliseconds: Int { Int(lease.milliseconds) }
    /// ``probeLease`` as the probe statements take it.
    var probeLeaseMilliseconds: Int64 { Int64(probeLease.milliseconds) }
}
