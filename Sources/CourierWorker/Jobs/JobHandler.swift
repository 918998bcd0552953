import CourierCore
import CourierStore
import Foundation

/// Runs one attempt of one kind of job. HTTP is the built-in kind; a team registers
/// its own kinds with `Worker.register(kind:handler:)` and gets the same leasing,
/// retries, breakers and dead letters.
///
/// Return a `Classification`: `Classification.success` when the job is done, or a
/// failure with its `ErrorClass`, whether the work may already have happened
/// (`mayHaveBeenDelivered`), whether retrying can help, and an optional Retry-After.
/// Task cancellation means the job was cancelled or the worker's grace ran out:
/// stop promptly and report `.cancelled`.
///
/// Handlers run on Swift's cooperative thread pool, which has one thread per core:
/// never block in `perform` (no synchronous network or database calls, no sleeps);
/// await asynchronous APIs, or move blocking work to a thread of your own.
public protocol JobHandler: Sendable {
    func perform(_ job: ClaimedJob) async -> Classification
}

extension Classification {
    /// A successful attempt (with the HTTP status, where there is one).
    public static func success(status: Int? = nil) -> Classification {
        Classification(succeeded: true, errorClass: nil, status: status, message: "ok", mayHaveBeenDelivered: true, retryable: false)
    }
}

/// Does nothing and succeeds: the `noop` kind, for measuring the queue itself.
public struct NoopJobHandler: JobHandler {
    public init() {}
    public func perform(_ job: ClaimedJob) async -> Classification { .success() }
}
