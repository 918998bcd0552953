/// The state of a job in `courier.jobs` (the table's CHECK lists the same values).
public enum JobState: String, Sendable, CaseIterable, Codable {
    /// Waiting for its `run_at`, or due and waiting for a worker.
    case available
    /// Leased by a worker.
    case running
}
