/// When the claimer looks again for jobs it knows fall due: a retry this worker scheduled,
/// or the follow-up claim after a NOTIFY. A value type with the clock passed in.
struct ClaimRecheck: Sendable, Equatable {
    /// How long after a due time the claimer looks: a job's run_at, stored in the database,
    /// is not earlier than the due time this worker noted, so looking a little later finds it due.
    static let slack: Duration = .milliseconds(5)

    /// The earliest due time noted and not yet looked at.
    private(set) var due: ContinuousClock.Instant?

    mutating func note(due instant: ContinuousClock.Instant) {
        due = due.map { min($0, instant) } ?? instant
    }

    /// How long the claimer may wait after a round that began at `now`. A round that began
    /// at or after the due time has looked (an idle worker claims in every round; a busy
    /// one is woken by its jobs' side when slots free up), so that due time is spent:
    /// no second round follows just for it.
    mutating func wait(afterRoundAt now: ContinuousClock.Instant, pollInterval: Duration) -> Duration {
        guard let due else { return pollInterval }
        if due <= now {
            self.due = nil
            return pollInterval
        }
        return min(pollInterval, due - now + Self.slack)
    }
}
