import Foundation
import Postgres

/// Loads millions of no-op jobs fast: `COPY courier.jobs FROM STDIN` in text format, rows
/// encoded with `CopyRowEncoder` on a producer thread while the connection sends, split
/// over `loaders` connections that copy at the same time (each its own transaction).
enum BulkJobs {
    /// One kind of row to load.
    struct Batch {
        var count: Int
        var queue: String
        var destination: String
        /// `run_at` as PostgreSQL text (e.g. "2026-12-02 21:00:00+00"), nil for the default now().
        var runAt: String?
        /// Loaded already held behind an open breaker (`held_since` set), as the keeper leaves them.
        var held = false
    }

    /// Copies every batch, spread over `loaders` connections; returns the wall seconds.
    @discardableResult
    static func load(_ batches: [Batch], loaders: Int, context: BenchContext) throws -> Double {
        let started = monotonicSeconds()
        let workers = max(1, loaders)
        // Each loader takes an equal share of every batch.
        var shares: [[Batch]] = Array(repeating: [], count: workers)
        for batch in batches where batch.count > 0 {
            for index in 0..<workers {
                var share = batch
                share.count = batch.count / workers + (index < batch.count % workers ? 1 : 0)
                if share.count > 0 { shares[index].append(share) }
            }
        }
        let failures = FailureBox()
        let group = DispatchGroup()
        for share in shares where !share.isEmpty {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let connection = try context.connect()
                    defer { connection.close() }
                    try copy(share, on: connection)
                } catch {
                    failures.add(error)
                }
            }.start()
        }
        group.wait()
        if let error = failures.first { throw error }
        return monotonicSeconds() - started
    }

    private static func copy(_ batches: [Batch], on connection: PostgresConnection) throws {
        let heldSince = try connection.query(PostgresQuery(unsafeSQL: "select now()::text")).rows[0].decode(0, as: String.self)
        let copied = try connection.copyIn("copy courier.jobs (kind, destination, args, queue, run_at, held_since) from stdin",
                                           producing: { emit in
            var encoder = CopyRowEncoder(reservingCapacity: 260 * 1024)
            for batch in batches {
                for _ in 0..<batch.count {
                    encoder.append("noop")
                    encoder.append(batch.destination)
                    encoder.append("{}")
                    encoder.append(batch.queue)
                    encoder.append(batch.runAt ?? heldSince)
                    encoder.append(batch.held ? heldSince : nil)
                    encoder.endRow()
                    if encoder.bytes.count >= 256 * 1024 {
                        guard emit(encoder) else { return }
                        encoder.removeAll()
                    }
                }
            }
            if encoder.rowCount > 0 { _ = emit(encoder) }
        })
        let expected = batches.reduce(0) { $0 + $1.count }
        guard copied == expected else { throw BenchError("COPY loaded \(copied) jobs, expected \(expected)") }
    }

    /// `run_at` text `seconds` from the database's now.
    static func runAt(secondsFromNow seconds: Int, on connection: PostgresConnection) throws -> String {
        try connection.query(PostgresQuery(unsafeSQL: "select (now() + make_interval(secs => $1::int))::text", binds: [seconds]))
            .rows[0].decode(0, as: String.self)
    }
}

/// Errors collected from several threads.
final class FailureBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [any Error] = []
    func add(_ error: any Error) { lock.withLock { errors.append(error) } }
    var first: (any Error)? { lock.withLock { errors.first } }
}
