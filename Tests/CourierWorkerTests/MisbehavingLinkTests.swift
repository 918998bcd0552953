import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// The core promise through a misbehaving database link (issue #40): replies that stall or
/// never arrive, connections cut in the middle of batches. One job is never on two workers at
/// once, nothing is lost, and a claim whose reply was lost costs no attempt.
@Suite(.serialized) struct MisbehavingLinkTests {
    typealias RunningWorker = CutOffWorkerTests.RunningWorker

    /// A claim commits, its reply is lost with the connection. The worker finds the lease it
    /// does not know once it reconnects and hands it back unattempted, instead of leaving it to
    /// expire, be rescued as a `lease_expired` attempt and run as attempt 2.
    @Test func aClaimWhoseReplyIsLostIsHandedBackUnattempted() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer()
        defer { server.stop() }
        let proxy = try FreezableProxy(forwardingTo: database.url)
        defer { proxy.stop() }
        // A lease long enough that only the hand-back, not a rescue, can bring the job back in
        // time; no polling, so no claim is in flight when the replies are held (it would wait
        // for its answer and never send the claim below).
        let worker = try RunningWorker(url: try proxy.url(for: database.url), lease: .seconds(60)) {
            $0.pollInterval = .seconds(3600)
        }
        worker.start()
        do {
            #expect(try await eventually(timeout: .seconds(30)) { worker.worker.leasesProven })
            // Enqueued while replies flow: its NOTIFY wakes a claim that finds it not yet due.
            var request = EnqueueRequest(url: server.baseURL + "/lost-claim")
            request.runAt = Date().addingTimeInterval(0.5)
            let id = try JobsTable.enqueue(request, on: db)
            // The job falls due by the database's clock (the claim's own test of run_at).
            #expect(try await eventually(timeout: .seconds(10)) {
                try db.query("select run_at <= now() from courier.jobs where id = \(id)").rows[0].decode(0, as: Bool.self)
            })
            proxy.holdReplies()
            // Woken as the listener wakes it on a NOTIFY: the claim commits, its answer waits in the proxy.
            worker.worker.claimer.noteNotification()
            worker.worker.claimerThread.wake()
            #expect(try await eventually(timeout: .seconds(30)) { try JobsTable.get(id: id, on: db)?.status == .running },
                    "the claim committed")
            proxy.cutConnections()
            proxy.releaseReplies()
            #expect(try await eventually(timeout: .seconds(30)) { try JobsTable.get(id: id, on: db)?.status == .succeeded },
                    "handed back and delivered long before the 60 s lease could expire")
            let record = try #require(try JobsTable.get(id: id, on: db))
            #expect(record.attempt == 1, "the lost claim used no attempt")
            #expect(server.requestCount(path: "/lost-claim") == 1)
            #expect(worker.log.all.contains { $0.contains("claim whose reply was lost") })
        } catch {
            await worker.stop()
            throw error
        }
        await worker.stop()
    }

    /// Three workers, each through a link that stalls replies and cuts connections at random
    /// (a seeded schedule), while jobs succeed, are retried, throttled (unattempted retries of
    /// jobs with a deadline) and handed back (a destination with a concurrency cap, the lease
    /// fence), and slow jobs are in flight at every fault. At the destinations no two requests of one job overlap in time, and every job
    /// ends succeeded or dead-lettered.
    @Test func aFleetThroughAMisbehavingLinkNeverRunsOneJobTwiceAtOnceAndLosesNothing() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let plain = try FaultServer()
        defer { plain.stop() }
        let capped = try FaultServer()
        defer { capped.stop() }
        _ = try DestinationsTable.merge(.init(destination: capped.baseURL, maxInFlight: 3), on: db)

        var ids: [Int64] = []
        let patterned = 90
        for n in 0..<patterned {
            let server = n % 3 == 0 ? capped : plain
            let path = "/job/\(n)"
            switch n % 5 {
            case 0: server.enqueueBehaviors([.respond(status: 503, headers: [], body: ""), .slow(delay: .milliseconds(60), then: .json200)],
                                            forPath: path)
            case 1: server.enqueueBehaviors([.respond(status: 429, headers: [("Retry-After", "0")], body: ""),
                                             .slow(delay: .milliseconds(60), then: .json200)], forPath: path)
            default: server.enqueueBehaviors([.slow(delay: .milliseconds(40 + 20 * (n % 4)), then: .json200)], forPath: path)
            }
            var request = EnqueueRequest(url: server.baseURL + path)
            if n % 5 == 1 { request.deadline = Date().addingTimeInterval(600) }
            ids.append(try JobsTable.enqueue(request, on: db))
        }

        let proxies = try (0..<3).map { _ in try FreezableProxy(forwardingTo: database.url) }
        defer { proxies.forEach { $0.stop() } }
        let workers = try proxies.map { try RunningWorker(url: try $0.url(for: database.url), lease: .seconds(3)) }
        workers.forEach { $0.start() }
        do {
            // The link misbehaves for a while: a seeded schedule of stalled replies and cut
            // connections, paced by what the worker behind the link does rather than by a clock.
            var rng = SplitMix64(seed: 40)
            var faults = (cuts: 0, stalls: 0, fenceStalls: 0, backstops: 0)
            for round in 0..<10 {
                let index = Int.random(in: 0..<proxies.count, using: &rng)
                let proxy = proxies[index]
                let worker = workers[index].worker
                // Slow jobs in flight when the fault comes (the first 90 are done within a
                // second or two): a request that is aborted ends when its connection closes,
                // as a real server sees it, so an abort that came too late would overlap.
                for k in 0..<6 {
                    let server = k % 3 == 0 ? capped : plain
                    let path = "/in-flight/\(round)/\(k)"
                    server.enqueueBehaviors([.holdUntilClientLeaves(delay: .milliseconds(2_500), then: .json200)], forPath: path)
                    ids.append(try JobsTable.enqueue(EnqueueRequest(url: server.baseURL + path), on: db))
                }
                if !(await eventually { !worker.stateSnapshot.jobs.isEmpty }) { faults.backstops += 1 }
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    proxy.cutConnections()
                    faults.cuts += 1
                case 1, 2:
                    // Replies held until the worker sent one or two more statements (their
                    // answers wait), and then maybe lost with the connection.
                    let statements = Int.random(in: 1...2, using: &rng)
                    let cut = Bool.random(using: &rng)
                    let sent = proxy.clientSendsForwarded
                    proxy.holdReplies()
                    if !(await eventually { proxy.clientSendsForwarded >= sent + statements }) { faults.backstops += 1 }
                    if cut { proxy.cutConnections() }
                    proxy.releaseReplies()
                    faults.stalls += 1
                default:
                    // Held until the fence stops trusting the worker's leases (2.4 s of 3 after
                    // they were last proven) and the worker aborted every job it holds.
                    proxy.holdReplies()
                    let fenced = await eventually {
                        !worker.leasesProven && worker.stateSnapshot.jobs.values.allSatisfy(\.abortedByFence)
                    }
                    if !fenced { faults.backstops += 1 }
                    proxy.releaseReplies()
                    faults.fenceStalls += 1
                }
                // The calm between faults: the worker proves its leases again and claims for a round or two.
                if !(await eventually { worker.leasesProven }) { faults.backstops += 1 }
                if !(await waitForRounds(worker, [ServiceName.claimer], Int.random(in: 1...2, using: &rng))) { faults.backstops += 1 }
            }
            let fenceAborts = workers.map { $0.metrics.snapshot().fenceAborts }.reduce(0, +)
            if faults.fenceStalls > 0 {
                #expect(fenceAborts > 0, "a stall past the fence found jobs in flight and the fence aborted them")
            }
            print("MisbehavingLinkTests: \(faults.cuts) cuts, \(faults.stalls) stalls, \(faults.fenceStalls) stalls past the fence "
                  + "(\(fenceAborts) jobs aborted by the fence); \(faults.backstops) pacing waits ran to their timeout")
            let finished = try await eventually(timeout: .seconds(120)) {
                try db.query("select count(*)::int from courier.jobs where id = any(\(ids))").rows[0].decode(0, as: Int.self) == 0
            }
            #expect(finished, "every job left the queue")
        } catch {
            for worker in workers { await worker.stop() }
            throw error
        }
        for worker in workers { await worker.stop() }

        let ended = try db.query("""
            select (select count(*) from courier.completed_jobs where id = any(\(ids)))
                 + (select count(*) from courier.dead_letters where job_id = any(\(ids)))
            """).rows[0].decode(0, as: Int64.self)
        #expect(ended == Int64(ids.count), "every job succeeded or is a dead letter: nothing lost")
        var overlaps: [String] = []
        for server in [plain, capped] {
            let byPath = Dictionary(grouping: server.requestSpans, by: \.path)
            for (path, spans) in byPath {
                let ordered = spans.sorted { $0.startNanos < $1.startNanos }
                for (earlier, later) in zip(ordered, ordered.dropFirst()) where (earlier.endNanos ?? .max) >= later.startNanos {
                    overlaps.append("\(path): \(earlier) and \(later)")
                }
            }
        }
        #expect(overlaps.isEmpty, "two requests of one job overlapped: \(overlaps)")
        let requests = plain.requestSpans.count + capped.requestSpans.count
        #expect(requests >= ids.count + 2 * (patterned / 5), "every job was sent, the retried and throttled ones again (\(requests))")
    }
}
