import CourierCore
import CourierStore
import Foundation

/// Deletes what is kept only for a while: archived successes past the retention, breaker
/// events past theirs, dead letters past their retention, workers long dead and old
/// attempt statistics.
///
/// Each table is pruned in bounded batches, oldest first, each batch its own short
/// statement that skips rows another worker's prune holds (`SKIP LOCKED`), so the cost
/// of a batch does not grow with the table and concurrent workers share the work. A
/// round keeps deleting while batches come back full, within a time budget per table;
/// a round that ran out of budget with work left is followed by the next one after
/// `catchUpInterval` instead of the full `interval`, so the prune keeps up with any
/// drain rate. It runs on its own thread and connection, never where leases are renewed.
final class Pruner: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// How often. Default 60 s (the first round a full interval after start).
        var interval: Duration = .seconds(60)
        /// The pause between rounds while a table is behind. Default 1 s.
        var catchUpInterval: Duration = .seconds(1)
        /// Rows per delete statement. Default 5,000.
        var batch = 5000
        /// How long one round may keep deleting from one table. Default 5 s.
        var budget: Duration = .seconds(5)
        var retentionMilliseconds: Int64
        var breakerEventRetentionMilliseconds: Int64
        var deadLetterRetentionMilliseconds: Int64?

        init(_ c: WorkerConfiguration) {
            retentionMilliseconds = Int64(c.retention.milliseconds)
            breakerEventRetentionMilliseconds = Int64(c.breakerEventRetention.milliseconds)
            deadLetterRetentionMilliseconds = c.deadLetterRetention.map { Int64($0.milliseconds) }
        }
    }

    let name = "courier-prune"
    let configuration: Configuration
    private let session: StoreSession
    private let clock: @Sendable () -> ContinuousClock.Instant
    private var lastRun: ContinuousClock.Instant?
    private var behind = false

    init(configuration: Configuration, session: StoreSession, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.configuration = configuration
        self.session = session
        self.clock = clock
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        guard let lastRun else {
            lastRun = now
            return configuration.interval
        }
        let wait = behind ? configuration.catchUpInterval : configuration.interval
        if now - lastRun < wait { return wait - (now - lastRun) }
        behind = pruneRound()
        self.lastRun = now
        return behind ? configuration.catchUpInterval : configuration.interval
    }

    /// One round over every table. Returns true when some table still had full batches
    /// when its budget ran out.
    @discardableResult
    func pruneRound() -> Bool {
        let batch = configuration.batch
        var behind = drain { try $0.completedJobsPrune(olderThanMilliseconds: self.configuration.retentionMilliseconds, batch: batch) }
        behind = drain { try $0.breakerEventsPrune(olderThanMilliseconds: self.configuration.breakerEventRetentionMilliseconds, batch: batch) } || behind
        if let keep = configuration.deadLetterRetentionMilliseconds {
            behind = drain { try $0.deadLettersPurge(olderThanMilliseconds: keep, batch: batch) } || behind
        }
        _ = session.run { store in
            _ = try store.workersPruneDead()
            _ = try store.attemptStatsPrune()
        }
        return behind
    }

    /// Deletes batches while they come back full, within the budget; true when stopped by the budget.
    private func drain(_ deleteBatch: (any WorkerStore) throws -> Int) -> Bool {
        let start = clock()
        while true {
            guard case .success(let deleted) = session.run(deleteBatch), deleted >= configuration.batch else { return false }
            if clock() - start >= configuration.budget { return true }
        }
    }

    func finish() { session.close() }
}
