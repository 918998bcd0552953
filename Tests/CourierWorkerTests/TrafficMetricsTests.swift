import CourierCore
import CourierHTTPServer
import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The destination traffic families of `/metrics` (pure) and the claimer's recheck interval.
@Suite struct TrafficMetricsTests {
    func rows(_ n: Int) -> [DestinationsTable.Traffic] {
        (0..<n).map { i in
            DestinationsTable.Traffic(destination: "https://d\(i).example:443", maxInFlight: 5, inFlight: i % 5, claimed: i * 10,
                                      slotWaits: i, tokenWaits: 0, retriesDeferred: 1)
        }
    }

    @Test func labelCardinalityIsBoundedWithTheRestUnderOther() throws {
        let page = try MetricsExposition(parsing: PrometheusText.trafficPage(rows(30), limit: 20))
        let inFlight = try #require(page.families["courier_destination_in_flight"])
        #expect(inFlight.type == "gauge")
        #expect(inFlight.samples.count == 21, "20 destinations and other")
        let labels = Set(inFlight.samples.compactMap { $0.labels["destination"] })
        #expect(labels.contains("other"))
        #expect(labels.contains("https://d29.example:443"), "the busiest keep their own label")
        #expect(!labels.contains("https://d0.example:443"), "the quietest are folded")
        // Folding keeps the totals.
        let deferred = try #require(page.families["courier_destination_retries_deferred_total"])
        #expect(deferred.samples.reduce(0) { $0 + $1.value } == 30)
        #expect(deferred.samples.first { $0.labels["destination"] == "other" }?.value == 10)
        #expect(page.families["courier_destinations_gated"]?.samples.first?.value == 30)
        for family in ["courier_destination_slot_waits_total", "courier_destination_token_waits_total",
                       "courier_destination_claimed_total", "courier_destination_max_in_flight", "courier_destination_paused"] {
            #expect(page.families[family] != nil, "\(family)")
        }
    }

    @Test func noGatedDestinationsMeansNoSeries() throws {
        let page = try MetricsExposition(parsing: PrometheusText.trafficPage([]))
        #expect(page.families["courier_destination_in_flight"]?.samples.isEmpty == true)
        #expect(page.families["courier_destinations_gated"]?.samples.first?.value == 0)
    }

    @Test func theClaimerRechecksPerTokenOfTheFastestRateAndNotAtAllWithoutPolicies() {
        #expect(TrafficState.claimRecheck(for: []) == nil)
        #expect(TrafficState.claimRecheck(for: [.init(destination: "a", maxInFlight: 3)]) == .milliseconds(50))
        #expect(TrafficState.claimRecheck(for: [.init(destination: "a", ratePerSecond: 20), .init(destination: "b", ratePerSecond: 50)])
                == .milliseconds(20))
        #expect(TrafficState.claimRecheck(for: [.init(destination: "a", ratePerSecond: 0.5)]) == .milliseconds(100))
        #expect(TrafficState.claimRecheck(for: [.init(destination: "a", ratePerSecond: 10_000)]) == .milliseconds(10))
        #expect(TrafficState.claimRecheck(for: [.init(destination: "a", paused: true)]) == .seconds(1))
    }
}
