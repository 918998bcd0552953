import CourierCore
import CourierHTTPServer
import CourierStore
import Foundation

extension PrometheusText {
    /// The most destinations exported under their own label; the rest are summed under
    /// `destination="other"` (see ``LabelSelection``).
    public static let trafficDestinationLimit = 20
    /// The most fairness keys exported under their own label, the same bound as destinations'.
    public static let fairnessKeyLimit = trafficDestinationLimit

    /// The destination traffic families of `/metrics`: fleet-wide figures of the gated
    /// destinations, as this worker's keeper last read them (the same on every worker:
    /// aggregate with `max`). Label cardinality is bounded: the ``trafficDestinationLimit``
    /// destinations with the most claims and waits keep their own label, the rest are
    /// folded into `other`. Pure.
    public static func trafficPage(_ rows: [DestinationsTable.Traffic], limit: Int = trafficDestinationLimit) -> String {
        let selection = LabelSelection(
            ranking: Dictionary(rows.map { ($0.destination, Double($0.claimed + $0.slotWaits + $0.tokenWaits + $0.inFlight)) },
                                uniquingKeysWith: max),
            limit: limit)
        func samples(_ name: String, _ value: (DestinationsTable.Traffic) -> Double) -> [Sample] {
            var values: [String: Double] = [:]
            for row in rows { values[row.destination, default: 0] += value(row) }
            return selection.fold(values).map { Sample(name, [("destination", $0.label)], $0.value) }
        }
        var page = PrometheusText()
        func family(_ name: String, _ type: MetricType, help: String, _ value: (DestinationsTable.Traffic) -> Double) {
            page.family(name, type, help: help, samples(name, value))
        }
        page.single("courier_destinations_gated", .gauge,
                    help: "Destinations with a traffic policy (cap, rate, retry budget or paused), fleet-wide.", Double(rows.count))
        family("courier_destination_in_flight", .gauge,
               help: "Jobs running now for each gated destination, fleet-wide (top destinations, the rest as other).") { Double($0.inFlight) }
        family("courier_destination_max_in_flight", .gauge,
               help: "The concurrency cap of each gated destination that has one.") { Double($0.maxInFlight ?? 0) }
        family("courier_destination_paused", .gauge,
               help: "Paused gated destinations (1 each).") { $0.paused ? 1 : 0 }
        family("courier_destination_claimed_total", .counter,
               help: "Jobs claimed through the gated claim, per destination, fleet-wide.") { Double($0.claimed) }
        family("courier_destination_slot_waits_total", .counter,
               help: "Claims that found a destination's jobs waiting and no free slot under its cap, fleet-wide.") { Double($0.slotWaits) }
        family("courier_destination_token_waits_total", .counter,
               help: "Claims that found a destination's jobs waiting and no token in its rate bucket, fleet-wide.") { Double($0.tokenWaits) }
        family("courier_destination_retries_deferred_total", .counter,
               help: "Claims that left retries waiting because the destination's retry budget was spent, fleet-wide.") { Double($0.retriesDeferred) }
        return page.text
    }
}
