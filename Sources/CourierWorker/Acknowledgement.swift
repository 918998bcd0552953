import CourierStore
import Foundation
import Postgres

/// One decided outcome waiting to be written. Acknowledgements are buffered and
/// written in batches, one statement per kind, each fenced by the job's lease.
enum Acknowledgement: Sendable, Equatable {
    case success(JobsTable.Success)
    case retry(JobsTable.Retry)
    case deadLetter(JobsTable.DeadLetter)
    /// A leased job that never started: back to the queue, attempt returned.
    case handBack(id: Int64, attempt: Int)
    /// A job this worker may not run (its configuration): back to the queue, attempt
    /// returned, not before now + milliseconds.
    case handBackLater(id: Int64, attempt: Int, milliseconds: Int64)
    /// A destination asked for no requests before now + delay (Retry-After).
    case destinationPause(destination: String, milliseconds: Int64)
    /// The result of a half-open probe, applied only if its generation is still current.
    case probeResult(destination: String, generation: Int64, succeeded: Bool)
    /// A probe that ended without a verdict (cancelled, aborted at shutdown).
    case probeAbandon(destination: String, generation: Int64)
}

/// The acknowledgements not yet written, shared by the job tasks (producers) and
/// the acknowledging thread (consumer).
final class AcknowledgementBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Acknowledgement] = []

    var count: Int { lock.withLock { items.count } }

    func append(_ item: Acknowledgement) {
        lock.withLock { items.append(item) }
    }

    /// Takes up to `limit` items, oldest first.
    func take(limit: Int) -> [Acknowledgement] {
        lock.withLock {
            let taken = Array(items.prefix(limit))
            items.removeFirst(taken.count)
            return taken
        }
    }

    /// Puts items that failed to be written back at the front, to be tried again.
    func putBack(_ batch: [Acknowledgement]) {
        lock.withLock { items.insert(contentsOf: batch, at: 0) }
    }
}

extension Acknowledgement {
    /// Writes a batch: one statement per kind of acknowledgement present.
    /// - Parameter archiveSuccesses: whether succeeded jobs are kept in `completed_jobs`
    ///   (false when the worker runs with `--retention 0`).
    static func write(_ batch: [Acknowledgement], worker: UUID, breakerPolicy: BreakersTable.ReportPolicy,
                      jitter: Double, archiveSuccesses: Bool = true, on connection: PostgresConnection) throws {
        var successes: [JobsTable.Success] = []
        var retries: [JobsTable.Retry] = []
        var letters: [JobsTable.DeadLetter] = []
        var handBackIDs: [Int64] = []
        var handBackAttempts: [Int] = []
        var pauses: [String: Int64] = [:]
        var later: [Int64: (ids: [Int64], attempts: [Int])] = [:]
        var probes: [(String, Int64, Bool)] = []
        var abandoned: [(String, Int64)] = []
        for item in batch {
            switch item {
            case .success(let s): successes.append(s)
            case .retry(let r): retries.append(r)
            case .deadLetter(let d): letters.append(d)
            case .handBack(let id, let attempt):
                handBackIDs.append(id)
                handBackAttempts.append(attempt)
            case .handBackLater(let id, let attempt, let ms):
                later[ms, default: ([], [])].ids.append(id)
                later[ms, default: ([], [])].attempts.append(attempt)
            case .destinationPause(let destination, let ms): pauses[destination] = max(pauses[destination] ?? 0, ms)
            case .probeResult(let destination, let generation, let succeeded): probes.append((destination, generation, succeeded))
            case .probeAbandon(let destination, let generation): abandoned.append((destination, generation))
            }
        }
        // Pauses first, so a job retried after Retry-After cannot be claimed before its destination is paused.
        for (destination, ms) in pauses.sorted(by: { $0.key < $1.key }) {
            try BreakersTable.pause(destination: destination, milliseconds: ms, on: connection)
        }
        for (destination, generation, succeeded) in probes {
            try BreakersTable.probeResult(destination: destination, generation: generation, succeeded: succeeded,
                                          worker: worker.uuidString.lowercased(), policy: breakerPolicy, jitter: jitter,
                                          on: connection)
        }
        for (destination, generation) in abandoned {
            try BreakersTable.abandonProbe(destination: destination, generation: generation,
                                           worker: worker.uuidString.lowercased(), on: connection)
        }
        try JobsTable.complete(successes, worker: worker, archive: archiveSuccesses, on: connection)
        try JobsTable.retry(retries, worker: worker, on: connection)
        try JobsTable.deadLetter(letters, worker: worker, on: connection)
        try JobsTable.handBack(ids: handBackIDs, attempts: handBackAttempts, worker: worker, on: connection)
        for (ms, group) in later.sorted(by: { $0.key < $1.key }) {
            try JobsTable.handBack(ids: group.ids, attempts: group.attempts, worker: worker, notBeforeMilliseconds: ms, on: connection)
        }
    }
}
