import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// The morning after an outage, as a new user would live it: real `jobworker`
/// processes, a destination that answers 500, dead letters, a dry run, the
/// destination back, and a paced replay with `jobctl dead replay --rate 20`.
@Suite("after an outage", .serialized)
struct OutageReplayTests {
    static let path = "/outage/hook"
    static let jobs = 60

    /// Fast retries; the breaker must not hold the destination during this story:
    /// --breaker-failures stops the consecutive-failure rule, --breaker-min-volume
    /// the failure-rate rule (60 jobs failing at once would trip it otherwise).
    static func workerArguments(_ url: String) -> [String] {
        ["--database-url", url, "--allow-private-networks", "--concurrency", "16", "--poll-interval", "100ms",
         "--backoff-base", "50ms", "--backoff-cap", "100ms", "--jitter", "none", "--lease", "10s", "--shutdown-grace", "5s",
         "--breaker-failures", "1000", "--breaker-min-volume", "1000000", "--log-level", "warning"]
    }

    @Test func outageDryRunAndPacedReplayDeliverEveryKeyOnce() throws {
        try ControlFixture.with { fixture throws in
            let server = try FaultServer(defaultBehavior: .json200)
            defer { server.stop() }
            server.setBehavior(.respond(status: 500, headers: [("Content-Type", "text/plain")], body: "down"), forPath: Self.path)
            let destination = "http://127.0.0.1:\(server.port)"
            let keys = (0..<Self.jobs).map { "outage-key-\($0)" }

            // 60 POST jobs, two attempts each, enqueued the way an operator would.
            let ndjson = keys.enumerated().map { n, key in
                #"{"url": "\#(server.baseURL)\#(Self.path)", "method": "POST", "max_attempts": 2, "idempotency_key": "\#(key)", "body": "{\"n\": \#(n)}"}"#
            }.joined(separator: "\n")
            let enqueued = fixture.run(["enqueue", "--ndjson", "-"], stdin: Data(ndjson.utf8))
            #expect(enqueued.status == 0, "\(enqueued)")

            // Two workers: the pace must hold across the fleet, not inside one process.
            let workers = try (0..<2).map { _ in try SpawnedProcess("jobworker", Self.workerArguments(fixture.database.url)) }
            defer { workers.forEach { $0.cleanUp() } }
            let logs = { workers.map(\.output).joined(separator: "\n---\n") }

            // The outage: every job is exhausted into the dead letters.
            let exhausted = try eventuallyBlocking(timeout: .seconds(90)) { try fixture.deadLetterCount == Self.jobs }
            let found = try fixture.deadLetterCount
            try #require(exhausted, "60 dead letters expected, found \(found); worker logs:\n\(logs())")
            #expect(try fixture.jobCount == 0)
            let letters = try fixture.run(["dead", "list", "--limit", "1000", "--json"]).array()
            #expect(letters.count == Self.jobs)
            for letter in letters {
                #expect(letter["reason"] as? String == "exhausted")
                #expect((letter["attempt"] as? NSNumber)?.intValue == 2)
                #expect(letter["method"] as? String == "POST")
                #expect(letter["destination"] as? String == destination)
                #expect(letter["last_class"] as? String == "server")
                #expect((letter["last_status"] as? NSNumber)?.intValue == 500)
                #expect((letter["worker"] as? String)?.isEmpty == false, "provenance: the worker")
                let history = letter["errors"] as? [[String: Any]] ?? []
                #expect(history.count == 2, "one history entry per attempt: \(history)")
                #expect(history.map { ($0["attempt"] as? NSNumber)?.intValue } == [1, 2])
                #expect(history.allSatisfy { $0["class"] as? String == "server" && ($0["status"] as? NSNumber)?.intValue == 500 })
            }
            #expect(Set(letters.compactMap { $0["idempotency_key"] as? String }) == Set(keys))
            #expect(server.requestCount(path: Self.path) == 2 * Self.jobs)
            #expect(try fixture.int("select count(*)::bigint from courier.breaker_events where to_state = 'open'") == 0,
                    "the breaker-friendly setup kept the breaker closed")

            // The dry run: a count per destination, and nothing changes.
            let dry = fixture.run(["dead", "replay", "--all", "--dry-run", "--rate", "20/s"])
            #expect(dry.status == 0, "\(dry)")
            #expect(dry.out.split(separator: "\n").contains { $0.hasPrefix(destination) && $0.hasSuffix(" \(Self.jobs)") }, "\(dry.out)")
            #expect(dry.out.contains("dry run: \(Self.jobs) dead letters would be replayed"), "\(dry.out)")
            #expect(try fixture.int("select count(*)::bigint from courier.dead_letters where replayed_at is null") == Self.jobs)
            #expect(try fixture.jobCount == 0)
            #expect(server.requestCount(path: Self.path) == 2 * Self.jobs)

            // The destination comes back; the replay is paced at 20/s across the fleet.
            server.setBehavior(.json200, forPath: Self.path)
            let before = server.requests.count
            let replay = fixture.run(["dead", "replay", "--all", "--rate", "20/s"])
            #expect(replay.status == 0, "\(replay)")
            #expect(replay.out.hasPrefix("replayed \(Self.jobs) dead letters (\(destination): \(Self.jobs)), paced over"), "\(replay.out)")

            let delivered = try eventuallyBlocking(timeout: .seconds(90)) {
                try fixture.int("select count(*)::bigint from courier.completed_jobs") == Self.jobs
            }
            try #require(delivered, "every replayed job should succeed; worker logs:\n\(logs())")
            let arrivals = Array(server.requests.dropFirst(before)).filter { $0.pathWithoutQuery == Self.path }
            #expect(arrivals.count == Self.jobs)
            let arrivedKeys = arrivals.compactMap { $0.header("Idempotency-Key") }
            #expect(arrivedKeys.count == Self.jobs)
            #expect(Set(arrivedKeys) == Set(keys), "each original key arrives")
            #expect(Set(arrivedKeys).count == arrivedKeys.count, "exactly once")
            let times = arrivals.map(\.arrivedAt).sorted()
            if let first = times.first, let last = times.last {
                #expect(last.timeIntervalSince(first) >= 2.5, "spread over \(last.timeIntervalSince(first))s, at most 20/s")
            }
            #expect(try fixture.int("""
                select count(*)::bigint from courier.dead_letters d join courier.completed_jobs c on c.id = d.replay_job_id
                where d.replayed_at is not null
                """) == Self.jobs, "replayed_at and the new job's id on every dead letter")

            // A second replay sends nothing: filters exit 0, explicit ids exit 3.
            let again = fixture.run(["dead", "replay", "--all", "--rate", "20/s"])
            #expect(again.status == 0, "\(again)")
            #expect(again.out == "replayed 0 dead letters\n")
            let ids = letters.compactMap { ($0["id"] as? NSNumber).map { String($0.int64Value) } }
            let byIDs = fixture.run(["dead", "replay"] + ids)
            #expect(byIDs.status == 3, "\(byIDs)")
            #expect(try fixture.jobCount == 0, "nothing new to send")

            workers.forEach { $0.signal(SIGTERM) }
            for worker in workers {
                #expect(worker.wait(timeout: .seconds(30)) == 0, "graceful shutdown; log:\n\(worker.output)")
            }
            #expect(server.requestCount(path: Self.path) == 3 * Self.jobs, "nothing more was sent")
        }
    }
}
