import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// What the `/metrics` sampler reads, and how often: the fleet-wide figures count whole
/// tables, so only the fleet reporter reads them, and a slow sample spaces out the next.
@Suite struct MetricsSamplerTests {
    @Test func aSampleThatTakesLongSpacesTheNextOneOut() {
        let interval = Duration.seconds(5)
        #expect(MetricsServerSampler.delay(afterSampleTook: .milliseconds(10), interval: interval) == .seconds(5))
        #expect(MetricsServerSampler.delay(afterSampleTook: .milliseconds(250), interval: interval) == .seconds(5))
        // A queue of millions that takes 2.6 s to count is counted every 52 s, not every 5.
        #expect(MetricsServerSampler.delay(afterSampleTook: .milliseconds(2600), interval: interval) == .seconds(52))
    }

    @Test func aWorkerExportsTheFleetFiguresWhenItIsTheReporterOrNoneIsKnown() {
        #expect(MetricsServerSampler.exportsFleet(reporter: "a", workerID: "a"))
        #expect(!MetricsServerSampler.exportsFleet(reporter: "a", workerID: "b"))
        #expect(MetricsServerSampler.exportsFleet(reporter: nil, workerID: "b"))
        #expect(MetricsServerSampler.exportsFleet(reporter: "a", workerID: nil))
    }

    @Test func onlyTheFleetReporterReadsTheFleetWideFigures() throws {
        try CourierTestDatabase.with { database, db in
            var request = EnqueueRequest(url: "http://127.0.0.1:9/a")
            request.queue = "mail"
            for _ in 0..<3 { _ = try JobsTable.enqueue(request, on: db) }
            // Two live workers: the one with the smaller id is the reporter.
            let ids = [UUID(), UUID()].sorted { $0.uuidString.lowercased() < $1.uuidString.lowercased() }
            for id in ids {
                try WorkersTable.register(.init(id: id, host: "test", pid: 1, queues: ["mail"], concurrency: 1, version: "test",
                                                heartbeatIntervalMilliseconds: 10_000), on: db)
            }
            let reporter = ids[0].uuidString.lowercased(), other = ids[1].uuidString.lowercased()
            let session = StoreSession(configuration: DatabaseConfiguration(connectionString: database.url), pause: { _ in })
            defer { session.close() }
            func sample(as workerID: String?) throws -> MetricsServerSampler.Sample {
                try session.run { try MetricsServerSampler.sample(from: $0, workerID: workerID) }.get()
            }

            let ofReporter = try sample(as: reporter)
            #expect(ofReporter.fleetReporter == reporter)
            #expect(ofReporter.queueDepths.contains { $0.queue == "mail" && $0.state == "available" && $0.count == 3 })
            #expect(ofReporter.liveWorkers == 2)

            let ofOther = try sample(as: other)
            #expect(ofOther.fleetReporter == reporter)
            #expect(ofOther.queueDepths.isEmpty && ofOther.liveWorkers == 0 && ofOther.breakerStates.isEmpty,
                    "a worker that does not export the fleet figures does not read them")

            #expect(try sample(as: nil).queueDepths.contains { $0.queue == "mail" && $0.count == 3 })
        }
    }
}
