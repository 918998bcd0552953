/// Decides, each claim round, how a worker's free slots are claimed, so that one
/// destination's backlog or slow requests cannot hold back other destinations' jobs
/// (destinations without a traffic policy; those with one are `claim_gated`'s, which
/// serves them least recently served first).
///
/// The plain claim takes a queue's runnable jobs oldest first: a large backlog for one
/// destination enqueued first is claimed before anything behind it. The spread claim
/// (`courier.claim_spread`) takes a few jobs per destination from a cursor, skipping the
/// destinations it is told to exclude. Two rules decide when to run it:
///
/// * **Dominance.** When the last plain batch came back full and at least
///   ``dominanceShare`` of it was one destination, that destination has a backlog in
///   front of whatever else waits: each round then runs a spread claim excluding it
///   before the plain claim takes the rest.
/// * **Share.** One destination may hold at most `concurrency - reserve` of the worker's
///   slots: at its share, the free slots go only to spread claims that exclude it, so a
///   destination whose requests are slow does not take the last slot another
///   destination's next job needs. With fewer than 4 slots there is no reserve.
///
/// A spread claim that found nothing is not repeated before jobs are announced again
/// (``noteJobsArrived()``) and ``minimumGap`` has passed, or before ``quietRecheck`` has
/// passed without an announcement (retries and other workers' jobs fall due unannounced).
/// A worker whose jobs are all one destination so runs at most one cheap spread claim per
/// announcement (at most one per ``minimumGap``) or per ``quietRecheck``, and never one
/// while its batches are not full.
///
/// A value: the claimer feeds it what each claim returned and asks it for each round's plan.
struct ClaimPlanner: Sendable, Equatable {
    /// One statement of a round's plan.
    enum Step: Sendable, Equatable {
        /// The plain claim, for up to `limit` jobs.
        case plain(limit: Int)
        /// The spread claim, for up to `limit` jobs, at most `perDestination` each, after the cursor, skipping `excluding`.
        case spread(limit: Int, perDestination: Int, after: String?, excluding: [String])
    }

    /// What the worker holds when the round is planned.
    struct Holding: Sendable, Equatable {
        /// Slots free for new jobs (at most the claim batch: the most one round claims).
        var free: Int
        /// The destination holding the most of the worker's slots, and how many; nil when none.
        var busiest: (destination: String, count: Int)?

        init(free: Int, busiest: (destination: String, count: Int)? = nil) {
            self.free = free
            self.busiest = busiest
        }

        static func == (a: Holding, b: Holding) -> Bool {
            a.free == b.free && a.busiest?.destination == b.busiest?.destination && a.busiest?.count == b.busiest?.count
        }
    }

    /// The worker's slots.
    let concurrency: Int
    /// The share of a full plain batch one destination must have to count as dominating it.
    let dominanceShare: Double
    /// The soonest an empty spread claim is repeated after an announcement.
    let minimumGap: Duration
    /// The soonest an empty spread claim is repeated without one.
    let quietRecheck: Duration

    /// Slots one destination cannot fill alone: a sixteenth of the slots, at least 1; none below 4 slots.
    var reserve: Int { concurrency < 4 ? 0 : max(1, concurrency / 16) }
    /// The most slots one destination holds through plain claims.
    var share: Int { concurrency - reserve }

    /// The destination that dominated the last full plain batch.
    private(set) var dominant: String?
    /// Where the next spread claim starts: the last destination a spread claim took from.
    private(set) var cursor: String?
    /// When the last spread claim that found nothing ran.
    private var emptySpreadAt: ContinuousClock.Instant?
    /// Announcements since then.
    private var announcedSinceEmpty = false

    init(concurrency: Int, dominanceShare: Double = 0.9, minimumGap: Duration = .milliseconds(20),
         quietRecheck: Duration = .seconds(1)) {
        self.concurrency = concurrency
        self.dominanceShare = dominanceShare
        self.minimumGap = minimumGap
        self.quietRecheck = quietRecheck
    }

    /// New jobs were announced (NOTIFY): a spread claim may find something again.
    mutating func noteJobsArrived() { announcedSinceEmpty = true }

    /// The statements for this round, in order. The claimer runs them while slots are
    /// left, each for at most what is still free (a step's limit is what the plan expects).
    func plan(_ holding: Holding, now: ContinuousClock.Instant) -> [Step] {
        let free = holding.free
        guard free > 0 else { return [] }
        // No destination may pass its share through the plain claim, whichever it returns.
        let plainLimit = reserve > 0 ? min(free, max(0, share - (holding.busiest?.count ?? 0))) : free
        var excluded: [String] = []
        if plainLimit < free, let busiest = holding.busiest { excluded.append(busiest.destination) }
        if let dominant, !excluded.contains(dominant) { excluded.append(dominant) }
        var steps: [Step] = []
        if !excluded.isEmpty && spreadAllowed(now: now) {
            steps.append(.spread(limit: free, perDestination: max(1, free / 8), after: cursor, excluding: excluded))
        }
        if plainLimit > 0 { steps.append(.plain(limit: plainLimit)) }
        return steps
    }

    /// A plain claim asked for `limit` and returned jobs of these destinations.
    mutating func plainClaimed(limit: Int, destinations: [String]) {
        guard limit > 0, destinations.count >= limit else {
            dominant = nil
            return
        }
        var counts: [String: Int] = [:]
        for destination in destinations { counts[destination, default: 0] += 1 }
        let top = counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }!
        dominant = Double(top.value) >= dominanceShare * Double(destinations.count) ? top.key : nil
    }

    /// A spread claim asked for `limit` and returned jobs of these destinations, in visit order,
    /// having looked at destinations up to `visited`. The cursor moves past every destination
    /// looked at, not only those a job came from: destinations with nothing due after the cursor
    /// would otherwise take every visit of every call.
    mutating func spreadClaimed(limit: Int, destinations: [String], visited: String? = nil, now: ContinuousClock.Instant) {
        if let last = visited ?? destinations.last { cursor = last }
        if destinations.isEmpty {
            emptySpreadAt = now
            announcedSinceEmpty = false
        } else {
            emptySpreadAt = nil
        }
    }

    private func spreadAllowed(now: ContinuousClock.Instant) -> Bool {
        guard let emptySpreadAt else { return true }
        let since = now - emptySpreadAt
        return since >= quietRecheck || (announcedSinceEmpty && since >= minimumGap)
    }

    /// How long until a spread claim held back by an empty one may run again; nil when none is held back.
    func spreadRecheck(now: ContinuousClock.Instant) -> Duration? {
        guard let emptySpreadAt else { return nil }
        let wait = (announcedSinceEmpty ? minimumGap : quietRecheck) - (now - emptySpreadAt)
        return wait > .zero ? wait : nil
    }

    static func == (a: ClaimPlanner, b: ClaimPlanner) -> Bool {
        a.concurrency == b.concurrency && a.dominant == b.dominant && a.cursor == b.cursor && a.emptySpreadAt == b.emptySpreadAt
            && a.announcedSinceEmpty == b.announcedSinceEmpty
    }
}
