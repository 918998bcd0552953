import CourierCore

/// What this worker's recent refusals say about its configuration: whether it is
/// *degraded* (`courier_worker_degraded`). A pure value; the caller passes the time and the
/// worker's count of attempts it made (refusals are not attempts).
///
/// One job this worker may not run says nothing about the worker: the job asks for
/// something (a private address, a secret, a handler) this worker was not given, and it is
/// handed back for another. So a worker is degraded only when, within ``window``,
/// - it refused at least ``manyJobs`` different jobs, or
/// - it refused at least ``fewestJobsForMost`` different jobs and its refusals outnumber
///   the attempts it made (most of its claims were refused).
///
/// Degraded is a metric and a log line, never readiness: a degraded worker still serves
/// every job it can run (`/readyz` reports only what stops it serving at all).
struct RefusalLedger: Sendable {
    /// How far back refusals count.
    static let window: Duration = .seconds(300)
    /// Different jobs refused within the window that make the worker degraded.
    static let manyJobs = 10
    /// Different jobs refused within the window before "most claims refused" can count.
    static let fewestJobsForMost = 3
    /// How often at most the attempt count is marked (the marks tell the attempts made in the window).
    static let markEvery: Duration = .seconds(10)

    /// The most refusals remembered; beyond it the oldest are forgotten early (a worker that
    /// refuses this many within the window is degraded by either rule anyway).
    static let remembered = 10_000

    /// The jobs refused within the window, each with the time of its last refusal.
    private var refusedJobs: [Int64: ContinuousClock.Instant] = [:]
    /// Each refusal within the window, oldest first, from `refusalsStart` on (the entries
    /// before it are forgotten; they are removed in bulk, so forgetting stays cheap).
    private var refusals: [(at: ContinuousClock.Instant, job: Int64)] = []
    private var refusalsStart = 0
    private var refusalCount: Int { refusals.count - refusalsStart }
    /// The worker's attempt count at moments within (and one just before) the window, oldest first.
    private var attemptMarks: [(at: ContinuousClock.Instant, attempts: Int)] = []
    /// The newest refusal's message.
    private var lastMessage: String?

    /// Notes that this worker refused `job` because of its configuration.
    mutating func noteRefusal(job: Int64, message: String, attemptsSoFar: Int, at now: ContinuousClock.Instant) {
        forget(before: now, attemptsSoFar: attemptsSoFar)
        refusedJobs[job] = now
        refusals.append((now, job))
        if refusalCount > Self.remembered { drop(refusalCount - Self.remembered) }
        lastMessage = message
    }

    /// Why the worker is degraded now, or nil when it is not. Mutating: it forgets what
    /// left the window.
    mutating func degradedReason(attemptsSoFar: Int, at now: ContinuousClock.Instant) -> String? {
        forget(before: now, attemptsSoFar: attemptsSoFar)
        let jobs = refusedJobs.count
        guard jobs >= Self.fewestJobsForMost, let lastMessage else { return nil }
        let window = DurationParser.format(Self.window)
        if jobs >= Self.manyJobs {
            return "\(jobs) jobs refused in the last \(window); the last: \(lastMessage)"
        }
        let attempts = attemptsSoFar - (attemptMarks.first?.attempts ?? attemptsSoFar)
        if refusalCount > attempts {
            return "\(refusalCount) of the last \(refusalCount + attempts) claims (\(jobs) jobs) refused in the last \(window); the last: \(lastMessage)"
        }
        return nil
    }

    private mutating func forget(before now: ContinuousClock.Instant, attemptsSoFar: Int) {
        let start = now - Self.window
        var stale = 0
        while refusalsStart + stale < refusals.count, refusals[refusalsStart + stale].at < start { stale += 1 }
        drop(stale)
        if refusedJobs.isEmpty { lastMessage = nil }
        // Keep the newest mark older than the window as the baseline of the attempts in it.
        while attemptMarks.count >= 2, attemptMarks[1].at <= start { attemptMarks.removeFirst() }
        if attemptMarks.last.map({ now - $0.at >= Self.markEvery }) ?? true {
            attemptMarks.append((now, attemptsSoFar))
        }
    }

    /// Forgets the `count` oldest refusals, and each job whose last refusal was among them.
    private mutating func drop(_ count: Int) {
        guard count > 0 else { return }
        for old in refusals[refusalsStart..<(refusalsStart + count)] where refusedJobs[old.job] == old.at {
            refusedJobs[old.job] = nil
        }
        refusalsStart += count
        if refusalsStart > 1_024, refusalsStart * 2 > refusals.count {
            refusals.removeFirst(refusalsStart)
            refusalsStart = 0
        }
    }
}
