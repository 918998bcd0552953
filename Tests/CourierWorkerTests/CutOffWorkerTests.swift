import CourierCore
import CourierHTTP
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// DESIGN.md invariant 9: a worker cut off from its database fences itself.
@Suite(.serialized) struct CutOffWorkerTests {
    /// An in-process worker on `url`, with its own transport, metrics and log.
    final class RunningWorker: @unchecked Sendable {
        let worker: Worker
        let metrics = WorkerMetrics()
        let log = LogCapture()
        private let transport: CurlTransport
        private var task: Task<Void, Never>?

        init(url: String, lease: Duration, _ configure: (inout WorkerConfiguration) -> Void = { _ in }) throws {
            var configuration = WorkerConfiguration(database: PostgresConfiguration(connectionString: url))
            configuration.concurrency = 8
            configuration.lease = lease
            configuration.shutdownGrace = .seconds(2)
            configuration.pollInterval = .milliseconds(200)
            configuration.allowPrivateNetworks = true
            configure(&configuration)
            transport = try CurlTransport(configuration: .init(allowPrivateNetworks: true))
            worker = Worker(configuration: configuration,
                            httpHandler: HTTPJobHandler(transport: transport, secrets: SecretResolver(environment: [:], directory: nil)),
                            logger: Logger(level: .debug, sink: { [log] in log.append($0) }), metrics: metrics)
        }

        func start() { task = Task.detached { [worker] in await worker.run() } }

        func stop() async {
            worker.shutdown()
            await task?.value
            transport.shutdown()
        }
    }

    @Test func aFrozenDatabaseLinkMakesTheWorkerAbortBeforeAnotherRescuesAndNoDeliveryOverlaps() async throws {
        let database = try CourierTestDatabase.create()
        defer { try? database.drop() }
        let db = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
        defer { db.close() }
        let server = try FaultServer()
        defer { server.stop() }
        let proxy = try FreezableProxy(forwardingTo: database.url)
        defer { proxy.stop() }

        // Each job's first delivery is held open until its client leaves; later ones are answered at once.
        let paths = (0..<4).map { "/cut/\($0)" }
        for path in paths { server.enqueueBehaviors([.holdUntilClientLeaves(delay: .seconds(120), then: .json200)], forPath: path) }
        let ids = try paths.map { try JobsTable.enqueue(EnqueueRequest(url: server.baseURL + $0), on: db) }

        let lease = Duration.seconds(4)
        let cutOff = try RunningWorker(url: try proxy.url(for: database.url), lease: lease)
        cutOff.start()
        let rescuer = try RunningWorker(url: database.url, lease: lease)
        var rescuerStarted = false
        do {
            #expect(try await eventually(timeout: .seconds(60)) { server.requestCount() == paths.count },
                    "the first worker delivers every job (through the proxy)")
            // The link goes silent (SIGSTOP-like: nothing is closed) for much longer than the lease.
            proxy.freeze()
            rescuer.start()
            rescuerStarted = true
            let delivered = try await eventually(timeout: .seconds(90)) {
                try db.query("select count(*)::int from courier.completed_jobs where id = any(\(ids))").rows[0].decode(0, as: Int.self) == ids.count
            }
            #expect(delivered, "the second worker rescues and delivers every job while the first is cut off")
            #expect(proxy.connectionsAccepted > 0)

            let spans = server.requestSpans
            for path in paths {
                let mine = spans.filter { $0.path == path }.sorted { $0.startNanos < $1.startNanos }
                #expect(mine.count == 2, "\(path): one aborted delivery, one rescue, \(mine.count) seen")
                guard mine.count >= 2 else { continue }
                #expect(mine[0].clientLeft, "\(path): the cut-off worker aborted its request")
                // Still open (no end) when the rescue began is an overlap too.
                let overlap = mine[0].endNanos.map { $0 >= mine[1].startNanos } ?? true
                #expect(!overlap, "\(path): two deliveries of one job overlapped: \(mine[0]) and \(mine[1])")
            }
            #expect(cutOff.metrics.snapshot().fenceAborts == paths.count, "the cut-off worker counted its fence aborts")
            #expect(cutOff.log.all.contains { $0.contains("cannot prove these leases") })
            #expect(cutOff.log.all.contains { $0.contains("claiming nothing until the database answers again") })
            #expect(!cutOff.worker.leasesProven)
            let records = try ids.map { try #require(try JobsTable.get(id: $0, on: db)) }
            #expect(records.allSatisfy { $0.status == .succeeded && $0.attempt == 2 }, "the rescue's attempt succeeded")

            // The link comes back: the cut-off worker proves its leases again and its late writes change nothing.
            proxy.thaw()
            #expect(try await eventually(timeout: .seconds(60)) { cutOff.worker.leasesProven })
            #expect(try await eventually(timeout: .seconds(30)) { cutOff.log.all.contains { $0.contains("claiming resumes") } })
            // Its late writes have had two more completion rounds (and claims two more rounds).
            #expect(await waitForRounds(cutOff.worker, [ServiceName.claimer, ServiceName.completer]))
            let after = try ids.map { try #require(try JobsTable.get(id: $0, on: db)) }
            #expect(after.allSatisfy { $0.status == .succeeded && $0.attempt == 2 })
            #expect(server.requestCount() == 2 * paths.count, "no third delivery")
        } catch {
            proxy.thaw()
            if rescuerStarted { await rescuer.stop() }
            await cutOff.stop()
            throw error
        }
        await rescuer.stop()
        await cutOff.stop()
    }
}
