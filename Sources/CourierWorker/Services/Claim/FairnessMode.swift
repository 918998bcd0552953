import CourierStore

/// Which of a worker's queues it claims with the fair claim (`courier.claim_fair`, weighted
/// round robin over fairness keys) instead of the plain one, and where its round over each
/// stands. A value: the claimer feeds it what the probe (`courier.queues_with_fairness_keys`)
/// and each claim said.
///
/// Why a mode: a queue whose jobs carry no fairness key is claimed as before, by the plain
/// claim and the destination planner, and pays nothing for keys. Keyed jobs are outside the
/// plain claim's index, so a queue is switched to the fair claim, which serves the default
/// key too, as soon as a probe finds keyed jobs in it:
/// * at most every ``probeInterval`` while the worker claims;
/// * at once (at most every ``minimumGap``) when jobs were announced and a plain claim came
///   back short, which is how a keyed job's first arrival shows itself.
/// A queue goes back to the plain claim once neither a probe nor a fair claim has found a keyed
/// job in it for ``linger``. A fair claim that took keyed jobs counts as finding them: a
/// trickle's jobs are claimed within milliseconds of their arrival, so a probe once a second
/// seldom sees one waiting, and a queue kept keyed by probes alone fell back to the plain claim
/// and then waited on the short-claim probe for each job (7-10 ms pickups at 50 jobs a second).
///
/// It also keeps, per key, where this worker's last claim of it stopped (the claim's
/// bounds, see `JobsTable.claimFair`), for at most ``boundsKept`` keys and at most
/// ``boundAge``: a bound that old is dropped, so each key is claimed from its start again at
/// least that often, and a job behind the bound (a hand-back, a row another worker skipped)
/// waits no longer than that (the plain claim's `ClaimBounds.maxSpacing`, 5 s).
struct FairnessMode: Sendable {
    let probeInterval: Duration
    let linger: Duration
    let minimumGap: Duration

    /// The queues claimed with the fair claim.
    private(set) var keyedQueues: Set<String> = []
    /// Per queue, when a probe last found keyed jobs in it.
    private var lastSeen: [String: ContinuousClock.Instant] = [:]
    private var lastProbe: ContinuousClock.Instant?
    private var announcedSinceProbe = false
    /// Per keyed queue, where this worker's round over its keys stands.
    private var cursors: [String: JobsTable.FairCursor] = [:]
    /// Per keyed queue and key, where the last claim of the key stopped, and when.
    private var bounds: [String: [String: (position: ClaimPosition, at: ContinuousClock.Instant)]] = [:]
    let boundsKept = 128
    /// Per keyed queue, until when it counts as shared: a fair claim took jobs of two or more keys.
    private var sharedUntil: [String: ContinuousClock.Instant] = [:]
    /// How long a claim that served several keys keeps the queue shared.
    let sharedFor: Duration = .seconds(1)
    /// The most a fair claim of a shared queue asks for. A job that arrives while a claim runs
    /// waits for the next one, and a claim of 128 jobs behind a flood takes several ms: at most
    /// 64 put a trickling tenant's p99 behind a 1M-job flood at 16 ms instead of 25-42 ms, for
    /// 20% of the flood's throughput (bench/notes.md, session 26). A queue one tenant has to
    /// itself is claimed in full batches.
    static let sharedClaimLimit = 64
    /// The plain claim's spacing of full claims from the start, so both claims bound a wait alike.
    let boundAge: Duration = ClaimBounds().maxSpacing

    init(probeInterval: Duration = .seconds(1), linger: Duration = .seconds(10), minimumGap: Duration = .milliseconds(20)) {
        self.probeInterval = probeInterval
        self.linger = linger
        self.minimumGap = minimumGap
    }

    func isKeyed(_ queue: String) -> Bool { keyedQueues.contains(queue) }

    /// New jobs were announced (NOTIFY).
    mutating func noteJobsArrived() { announcedSinceProbe = true }

    /// Whether to probe now: never yet, ``probeInterval`` since the last, or, when a plain
    /// claim just came back short after an announcement, ``minimumGap`` since the last.
    func probeDue(now: ContinuousClock.Instant, plainCameBackShort: Bool = false) -> Bool {
        guard let lastProbe else { return true }
        let since = now - lastProbe
        return since >= probeInterval || (plainCameBackShort && announcedSinceProbe && since >= minimumGap)
    }

    /// A probe of `queues` found keyed jobs waiting in `keyed`.
    mutating func probed(queues: [String], keyed: Set<String>, now: ContinuousClock.Instant) {
        lastProbe = now
        announcedSinceProbe = false
        for queue in queues {
            if keyed.contains(queue) {
                lastSeen[queue] = now
                keyedQueues.insert(queue)
            } else if let seen = lastSeen[queue], now - seen < linger {
                continue
            } else {
                keyedQueues.remove(queue)
                lastSeen[queue] = nil
                sharedUntil[queue] = nil
                cursors[queue] = nil
                bounds[queue] = nil
            }
        }
    }

    func cursor(_ queue: String) -> JobsTable.FairCursor { cursors[queue] ?? .start }

    /// The limit of a fair claim of `queue` that has `free` slots to fill: at most
    /// ``sharedClaimLimit`` while the queue is shared between keys.
    func fairClaimLimit(_ queue: String, free: Int, now: ContinuousClock.Instant) -> Int {
        if let until = sharedUntil[queue], now < until { return min(free, Self.sharedClaimLimit) }
        return free
    }

    /// The bounds to claim `queue` from at `now`: those younger than ``boundAge``.
    func bounds(_ queue: String, now: ContinuousClock.Instant) -> [String: ClaimPosition] {
        (bounds[queue] ?? [:]).filter { now - $0.value.at < boundAge }.mapValues(\.position)
    }

    /// A fair claim of `queue` stopped at `cursor`, having taken up to `last` of each key (the
    /// default key is ""), `claimed[key]` jobs of each. A key's bound keeps the time it was first
    /// set, so it ages out however busy the key is.
    ///
    /// Only a key with a backlog keeps a bound: one that gave a whole `quantum`, or whose visit
    /// this call's limit cut short (the cursor's key). A key that ran dry has no dead index head
    /// worth stepping over (its next job is a new one), and the claim visits every key it has a
    /// bound for: with bounds for 50 trickling tenants each call paid 50 takes, 4.7 ms against
    /// 0.85 ms (bench/notes.md, session 26).
    mutating func fairClaimed(_ queue: String, cursor: JobsTable.FairCursor, last: [String: ClaimPosition] = [:],
                              claimed: [String: Int] = [:], quantum: Int = 0, now: ContinuousClock.Instant) {
        cursors[queue] = cursor
        if last.keys.contains(where: { !$0.isEmpty }) { lastSeen[queue] = now }
        if claimed.count >= 2 { sharedUntil[queue] = now + sharedFor }
        var kept = (bounds[queue] ?? [:]).filter { now - $0.value.at < boundAge }
        for (key, position) in last {
            if claimed[key, default: 0] < quantum, cursor.key != key {
                kept[key] = nil
                continue
            }
            kept[key] = (position, kept[key]?.at ?? now)
        }
        if kept.count > boundsKept {
            for key in kept.sorted(by: { $0.value.at < $1.value.at }).prefix(kept.count - boundsKept).map(\.key) { kept[key] = nil }
        }
        bounds[queue] = kept
    }
}
