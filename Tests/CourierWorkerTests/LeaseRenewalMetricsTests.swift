import CourierCore
import CourierHTTPServer
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// Issue 40: `courier_lease_renewal_seconds`, the heartbeater's renewal round trip, is
/// exported as a histogram and counts every answered renewal.
@Suite struct LeaseRenewalMetricsTests {
    static let state = PrometheusText.WorkerState(workerID: "w1", version: "t", concurrency: 4, inFlight: 1,
                                                  stopping: false, databaseReachable: true)

    static func page(_ metrics: WorkerMetrics) -> String {
        PrometheusText.workerPage(metrics: metrics.snapshot(), state: state, sampling: .init())
    }

    @Test func renewalsAreAHistogramOnThePage() throws {
        let metrics = WorkerMetrics()
        let empty = try MetricsExposition(parsing: Self.page(metrics))
        try empty.checkConventions()
        #expect(empty.families["courier_lease_renewal_seconds"]?.type == "histogram")
        #expect(empty.value("courier_lease_renewal_seconds_count") == 0, "reads 0 before the first renewal")

        metrics.recordLeaseRenewal(.milliseconds(3))
        metrics.recordLeaseRenewal(.milliseconds(40))
        metrics.recordLeaseRenewal(.milliseconds(1_500))
        let page = try MetricsExposition(parsing: Self.page(metrics))
        try page.checkConventions()
        #expect(page.value("courier_lease_renewal_seconds_count") == 3)
        #expect(page.value("courier_lease_renewal_seconds_bucket", ["le": "0.005"]) == 1)
        #expect(page.value("courier_lease_renewal_seconds_bucket", ["le": "0.05"]) == 2)
        #expect(page.value("courier_lease_renewal_seconds_bucket", ["le": "1"]) == 2)
        #expect(page.value("courier_lease_renewal_seconds_bucket", ["le": "2.5"]) == 3)
        #expect(page.value("courier_lease_renewal_seconds_bucket", ["le": "+Inf"]) == 3)
        #expect(abs((page.value("courier_lease_renewal_seconds_sum") ?? 0) - 1.543) < 1e-9)
    }

    @Test func theRealPrometheusParserReadsTheRenewalHistogram() throws {
        let metrics = WorkerMetrics()
        metrics.recordLeaseRenewal(.milliseconds(7))
        metrics.recordLeaseRenewal(.seconds(4))
        let families = try MetricsPrometheusClientTests.parse(Self.page(metrics))
        let family = try #require(families["courier_lease_renewal_seconds"])
        #expect(family.type == "histogram")
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            family.samples.first { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }?.value
        }
        #expect(value("courier_lease_renewal_seconds_count") == 2)
        #expect(value("courier_lease_renewal_seconds_bucket", ["le": "0.01"]) == 1)
        #expect(value("courier_lease_renewal_seconds_bucket", ["le": "5"]) == 2)
    }

    @Test func theHeartbeaterTimesEveryRenewal() throws {
        try CourierTestDatabase.with { database, db in
            let config = WorkerConfiguration(database: DatabaseConfiguration(connectionString: database.url))
            let worker = UUID()
            let id = try JobsTable.enqueue(EnqueueRequest(url: "http://127.0.0.1:9/held"), on: db)
            _ = try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 30_000, on: db)
            let holder = FakeHolder()
            holder.held = [id]
            let registration = WorkersTable.Registration(id: worker, host: "test", pid: 1, queues: ["default"], concurrency: 1,
                                                         version: "test", heartbeatIntervalMilliseconds: 10_000)
            let metrics = WorkerMetrics()
            // A clock that moves 25 ms between the send and the answer of each renewal.
            let ticks = TickingClock(step: .milliseconds(25))
            let heartbeater = Heartbeater(configuration: .init(leases: LeaseSettings(config), registration: registration),
                                          session: StoreSession(configuration: DatabaseConfiguration(connectionString: database.url),
                                                                pause: { _ in }),
                                          holder: holder, metrics: metrics, clock: ticks.now)
            let start = ContinuousClock.now
            _ = heartbeater.runOnce(now: start)
            #expect(holder.renewed.map(\.id) == [id], "the renewal went through")
            // Not due yet: no renewal, nothing recorded.
            _ = heartbeater.runOnce(now: start + .milliseconds(10))
            #expect(metrics.snapshot().leaseRenewals.count == 1)
            _ = heartbeater.runOnce(now: start + config.heartbeatInterval)
            let renewals = metrics.snapshot().leaseRenewals
            #expect(renewals.count == 2)
            #expect(abs(renewals.sum - 0.05) < 1e-9, "each renewal timed from its send to its answer: \(renewals.sum)")
            heartbeater.finish()
        }
    }
}

/// A clock that advances by `step` every time it is read.
final class TickingClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = ContinuousClock.now
    let step: Duration
    init(step: Duration) { self.step = step }
    var now: @Sendable () -> ContinuousClock.Instant {
        { [self] in lock.withLock { defer { current += step }; return current } }
    }
}
