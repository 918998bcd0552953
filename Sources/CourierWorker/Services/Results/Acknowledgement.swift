import CourierStore
import Foundation

/// One decided outcome waiting to be written. Acknowledgements are buffered and
/// written in batches, one statement per kind, each fenced by the job's lease.
enum Acknowledgement: Sendable, Equatable {
    case success(JobsTable.Success)
    case retry(JobsTable.Retry)
    case deadLetter(JobsTable.DeadLetter)
    /// A leased job that never started: back to the queue, attempt returned. `lease` is the
    /// lease's fence token.
    case handBack(id: Int64, lease: Int64)
    /// A job this worker may not run (its configuration): back to the queue, attempt
    /// returned, not before now + milliseconds, the refusal and its reason counted with the job.
    case refuse(id: Int64, lease: Int64, milliseconds: Int64, reason: String)
    /// A destination asked for no requests before now + delay (Retry-After).
    case destinationPause(destination: String, milliseconds: Int64)
    /// The result of a half-open probe, applied only if its generation is still current.
    case probeResult(destination: String, generation: Int64, succeeded: Bool)
    /// A probe that ended without a verdict (cancelled, aborted at shutdown).
    case probeAbandon(destination: String, generation: Int64)
}

extension Acknowledgement {
    /// Writes a batch: one statement per kind of acknowledgement present.
    /// - Parameter archiveSuccesses: whether succeeded jobs are kept in `completed_jobs`
    ///   (false when the worker runs with `--retention 0`).
    static func write(_ batch: [Acknowledgement], worker: UUID, breakerPolicy: BreakersTable.ReportPolicy,
                      jitter: Double, archiveSuccesses: Bool = true, to store: any WorkerStore) throws {
        var successes: [JobsTable.Success] = []
        var retries: [JobsTable.Retry] = []
        var letters: [JobsTable.DeadLetter] = []
        var handBackIDs: [Int64] = []
        var handBackLeases: [Int64] = []
        var pauses: [String: Int64] = [:]
        var later: [Int64: [JobsTable.Refusal]] = [:]
        var probes: [(String, Int64, Bool)] = []
        var abandoned: [(String, Int64)] = []
        for item in batch {
            switch item {
            case .success(let s): successes.append(s)
            case .retry(let r): retries.append(r)
            case .deadLetter(let d): letters.append(d)
            case .handBack(let id, let lease):
                handBackIDs.append(id)
                handBackLeases.append(lease)
            case .refuse(let id, let lease, let ms, let reason):
                later[ms, default: []].append(JobsTable.Refusal(id: id, lease: lease, reason: reason))
            case .destinationPause(let destination, let ms): pauses[destination] = max(pauses[destination] ?? 0, ms)
            case .probeResult(let destination, let generation, let succeeded): probes.append((destination, generation, succeeded))
            case .probeAbandon(let destination, let generation): abandoned.append((destination, generation))
            }
        }
        // Pauses first, so a job retried after Retry-After cannot be claimed before its destination is paused.
        for (destination, ms) in pauses.sorted(by: { $0.key < $1.key }) {
            try store.breakerPause(destination: destination, milliseconds: ms)
        }
        for (destination, generation, succeeded) in probes {
            _ = try store.breakerProbeResult(destination: destination, generation: generation, succeeded: succeeded,
                                             worker: worker.uuidString.lowercased(), policy: breakerPolicy, jitter: jitter)
        }
        for (destination, generation) in abandoned {
            _ = try store.breakerAbandonProbe(destination: destination, generation: generation,
                                              worker: worker.uuidString.lowercased())
        }
        _ = try store.jobsComplete(successes, worker: worker, archive: archiveSuccesses)
        _ = try store.jobsRetry(retries, worker: worker)
        _ = try store.jobsDeadLetter(letters, worker: worker)
        _ = try store.jobsHandBack(ids: handBackIDs, leases: handBackLeases, worker: worker)
        for (ms, group) in later.sorted(by: { $0.key < $1.key }) {
            _ = try store.jobsRefuse(group, worker: worker, notBeforeMilliseconds: ms)
        }
    }
}

extension Acknowledgement {
    /// The job lease this result is about (nil for destination pauses and probe verdicts).
    /// The lease stays renewed until the result is written (DESIGN.md invariant 2): a job
    /// leaves the worker's held set when its result is queued, not when it is written.
    var lease: WorkerStateMachine.Lease? {
        switch self {
        case .success(let s): WorkerStateMachine.Lease(id: s.id, token: s.lease)
        case .retry(let r): WorkerStateMachine.Lease(id: r.id, token: r.lease)
        case .deadLetter(let d): WorkerStateMachine.Lease(id: d.id, token: d.lease)
        case .handBack(let id, let lease), .refuse(let id, let lease, _, _): WorkerStateMachine.Lease(id: id, token: lease)
        case .destinationPause, .probeResult, .probeAbandon: nil
        }
    }

    /// Whether writing it puts a job back in the queue (so the claimer should look).
    var requeuesJob: Bool {
        switch self {
        case .retry, .handBack, .refuse: true
        default: false
        }
    }

    /// A short description for logs: the kind and the job or destination, no payload.
    var summary: String {
        switch self {
        case .success(let s): "success job=\(s.id) attempt=\(s.attempt)"
        case .retry(let r): "retry job=\(r.id) attempt=\(r.attempt)"
        case .deadLetter(let d): "dead_letter job=\(d.id) attempt=\(d.attempt) reason=\(d.reason)"
        case .handBack(let id, let lease): "hand_back job=\(id) lease=\(lease)"
        case .refuse(let id, let lease, let ms, _): "refuse job=\(id) lease=\(lease) not_before_ms=\(ms)"
        case .destinationPause(let destination, let ms): "pause destination=\(destination) ms=\(ms)"
        case .probeResult(let destination, let generation, let ok): "probe_result destination=\(destination) generation=\(generation) healthy=\(ok)"
        case .probeAbandon(let destination, let generation): "probe_abandon destination=\(destination) generation=\(generation)"
        }
    }
}
