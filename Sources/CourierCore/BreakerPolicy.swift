/// When a destination's circuit breaker opens, and for how long.
///
/// Defaults: trip on 5 consecutive failures, or on a failure rate of at least
/// 50% over a 60 s window once 20 outcomes were seen there; stay open 30 s,
/// doubling after each failed probe up to 10 min, every open period (the first
/// too) varied by up to ±20%; a probe holds its lease for 30 s, or for the job lease when
/// that is longer (``probeLease(forJobLease:)``); a timeout counts against the destination
/// only when the job allowed at least 1 s (``timeoutEvidenceFloor``).
public struct BreakerPolicy: Sendable, Equatable {
    /// Consecutive failures that trip the breaker (`--breaker-failures`, default 5).
    public var failureThreshold: Int
    /// The window the failure rate is measured over (`--breaker-window`, default 60s).
    public var window: Duration
    /// Outcomes needed in the window before the rate counts (default 20).
    public var minimumVolume: Int
    /// The failure rate (0...1) that trips the breaker once the volume is reached (default 0.5).
    public var failureRateThreshold: Double
    /// The first open period (`--breaker-cooldown`, default 30s).
    public var cooldown: Duration
    /// The longest open period (`--breaker-cooldown-max`, default 10m).
    public var cooldownMax: Duration
    /// The shortest probe lease: how long a half-open probe may run unrenewed before another
    /// worker may probe (default 30s). Workers use ``probeLease(forJobLease:)``.
    public var probeLease: Duration
    /// Every open period is scaled by a random factor in `1 ± cooldownJitter` (0...1,
    /// default 0.2), so breakers that opened together do not probe in lockstep. It never
    /// exceeds `cooldownMax`. The database applies the same rule (the worker draws the factor).
    public var cooldownJitter: Double
    /// The shortest job timeout whose expiry counts as breaker evidence
    /// (`--breaker-min-timeout`, default 1s). A job's `timeout_ms` is its enqueuer's choice:
    /// a job that allowed 1 ms times out against the healthiest partner, and that says
    /// nothing about the partner, which other tenants share. Such a timeout is still the
    /// job's failure (retried or dead-lettered as usual); it only does not move the breaker.
    public var timeoutEvidenceFloor: Duration

    /// Creates a policy; the defaults are Courier's.
    public init(
        failureThreshold: Int = 5,
        window: Duration = .seconds(60),
        minimumVolume: Int = 20,
        failureRateThreshold: Double = 0.5,
        cooldown: Duration = .seconds(30),
        cooldownMax: Duration = .seconds(600),
        probeLease: Duration = .seconds(30),
        cooldownJitter: Double = 0.2,
        timeoutEvidenceFloor: Duration = .seconds(1)
    ) {
        self.failureThreshold = failureThreshold
        self.window = window
        self.minimumVolume = minimumVolume
        self.failureRateThreshold = failureRateThreshold
        self.cooldown = cooldown
        self.cooldownMax = cooldownMax
        self.probeLease = probeLease
        self.cooldownJitter = cooldownJitter
        self.timeoutEvidenceFloor = timeoutEvidenceFloor
    }

    /// Whether a classified attempt of a job that allowed `jobTimeout` is evidence about its
    /// destination's health: a success always is; a failure is when its class counts
    /// (``Classification/countsAsBreakerFailure``), except a timeout of a job whose own
    /// timeout is below ``timeoutEvidenceFloor``.
    public func isEvidence(_ classification: Classification, jobTimeout: Duration) -> Bool {
        if classification.succeeded { return true }
        guard classification.countsAsBreakerFailure else { return false }
        return classification.errorClass != .timeout || jobTimeout >= timeoutEvidenceFloor
    }

    /// Checks the values; errors name the worker flags.
    public func validate() throws(ValidationError) {
        guard failureThreshold >= 1 else {
            throw ValidationError(field: "--breaker-failures", message: "must be at least 1")
        }
        guard window > .zero else {
            throw ValidationError(field: "--breaker-window", message: "must be greater than zero")
        }
        guard minimumVolume >= 1 else {
            throw ValidationError(field: "--breaker-min-volume", message: "must be at least 1")
        }
        guard failureRateThreshold > 0, failureRateThreshold <= 1 else {
            throw ValidationError(field: "--breaker-failure-rate", message: "must be greater than 0 and at most 1")
        }
        guard cooldown > .zero else {
            throw ValidationError(field: "--breaker-cooldown", message: "must be greater than zero")
        }
        guard cooldownMax >= cooldown else {
            throw ValidationError(field: "--breaker-cooldown-max", message: "must be at least --breaker-cooldown (\(DurationParser.format(cooldown)))")
        }
        guard probeLease > .zero else {
            throw ValidationError(field: "--breaker-probe-lease", message: "must be greater than zero")
        }
        guard cooldownJitter >= 0, cooldownJitter <= 1 else {
            throw ValidationError(field: "--breaker-cooldown-jitter", message: "must be between 0 and 1")
        }
        guard timeoutEvidenceFloor >= .zero else {
            throw ValidationError(field: "--breaker-min-timeout", message: "must not be negative")
        }
    }

    /// The probe lease a worker whose job leases last `jobLease` takes and renews: the longer
    /// of ``probeLease`` and `jobLease`.
    ///
    /// Why: the probe's request is a job, renewed by the same heartbeat as its probe lease, and
    /// a worker that cannot renew (a stalled database link) keeps running it until its lease
    /// fence aborts it, shortly before the *job* lease could expire. A probe lease shorter
    /// than the job lease would expire first, another worker would win a second probe, and two
    /// probes would run at once (DESIGN.md invariant 4). At least the job lease, the probe
    /// lease outlives every moment the worker may still be sending its probe.
    public func probeLease(forJobLease jobLease: Duration) -> Duration {
        max(probeLease, jobLease)
    }

    /// Why these counts trip the breaker, or nil if they do not.
    ///
    /// Consecutive failures are checked first; the rate applies once
    /// `successes + failures >= minimumVolume`, and trips at or above the threshold.
    public func tripReason(consecutiveFailures: Int, successes: Int, failures: Int) -> BreakerTransition.Reason? {
        if consecutiveFailures >= failureThreshold { return .consecutiveFailures }
        let volume = successes + failures
        if volume >= minimumVolume, volume > 0, Double(failures) / Double(volume) >= failureRateThreshold {
            return .failureRate
        }
        return nil
    }

    /// The cooldown after a failed probe: twice `current`, at most `cooldownMax`.
    public func nextCooldown(after current: Duration) -> Duration {
        min(current.scaled(by: 2, cap: cooldownMax), cooldownMax)
    }

    /// A factor uniform in `1 - cooldownJitter ... 1 + cooldownJitter`.
    public func cooldownJitterFactor(using rng: inout some RandomNumberGenerator) -> Double {
        let jitter = min(max(cooldownJitter, 0), 1)
        guard jitter > 0 else { return 1 }
        return Double.random(in: (1 - jitter)...(1 + jitter), using: &rng)
    }

    /// The open period actually used for `cooldown`: `cooldown` times
    /// ``cooldownJitterFactor(using:)``, at most `cooldownMax`.
    public func jitteredCooldown(_ cooldown: Duration, using rng: inout some RandomNumberGenerator) -> Duration {
        min(cooldown.scaled(by: cooldownJitterFactor(using: &rng), cap: cooldownMax), cooldownMax)
    }
}
