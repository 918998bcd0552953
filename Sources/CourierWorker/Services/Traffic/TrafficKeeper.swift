import CourierCore
import CourierStore
import Foundation

/// Keeps destination traffic control moving, off the paths that renew leases and write
/// results: runs `courier.traffic_maintain` (holding and releasing for breakers, gating and
/// ungating for traffic policies, in bounded batches, one worker of the fleet at a time)
/// and reads the gated destinations' policies and counters into ``TrafficState`` for the
/// claimer and `/metrics`, and the destinations held back into ``HeldBackDestinations`` for the
/// requests about to be sent. Logs when a policy changes and when a destination is found at
/// its limit (at most once a minute per destination).
final class TrafficKeeper: WorkerService, @unchecked Sendable {
    struct Configuration: Sendable {
        /// Most jobs one pass moves (one transaction). Default 2000.
        var batch = 2000
        /// How often it runs when nothing was left to move. Default 1 s.
        var interval: Duration = .seconds(1)
        /// The shortest time between two "at its limit" lines about one destination. Default 60 s.
        var limitLogInterval: Duration = .seconds(60)
    }

    let name = "courier-traffic"
    let configuration: Configuration
    private let session: StoreSession
    private let state: TrafficState
    private let heldBack: HeldBackDestinations?
    private let logger: Logger
    private var seen: [String: DestinationsTable.Traffic] = [:]
    private var limitLog: LogThrottle
    private var firstRead = true

    init(configuration: Configuration = Configuration(), session: StoreSession, state: TrafficState,
         heldBack: HeldBackDestinations? = nil, logger: Logger) {
        self.heldBack = heldBack
        self.configuration = configuration
        self.session = session
        self.state = state
        self.logger = logger
        self.limitLog = LogThrottle(interval: configuration.limitLogInterval)
    }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        let moved = session.run { try $0.trafficMaintain(batch: self.configuration.batch) }
        if case .success(let rows) = session.run({ try $0.destinationsTraffic() }) {
            state.update(rows)
            report(rows, now: now)
        }
        // `now` was taken before this read was sent: the read is at least that fresh.
        if let heldBack, case .success(let held) = session.run({ try $0.destinationsHeldBack(limit: HeldBackDestinations.readLimit) }) {
            heldBack.update(held, sentAt: now)
        }
        if case .success(let count) = moved, count >= configuration.batch { return .zero }
        return configuration.interval
    }

    func finish() { session.close() }

    /// Logs changed policies and destinations at a limit since the last read.
    private func report(_ rows: [DestinationsTable.Traffic], now: ContinuousClock.Instant) {
        var fresh: [String: DestinationsTable.Traffic] = [:]
        for row in rows {
            fresh[row.destination] = row
            let before = seen[row.destination]
            if !firstRead && (before == nil || before!.updatedAt != row.updatedAt) {
                logger.info("destination traffic policy changed", Self.fields(row))
            }
            if let before, row.limitedAt != nil, row.limitedAt != before.limitedAt, limitLog.allows(row.destination, at: now) {
                var fields = Self.fields(row)
                fields.append(("in_flight", row.inFlight))
                fields.append(("slot_waits", row.slotWaits - before.slotWaits))
                fields.append(("token_waits", row.tokenWaits - before.tokenWaits))
                fields.append(("retries_deferred", row.retriesDeferred - before.retriesDeferred))
                logger.info("destination at its traffic limit: jobs wait without using attempts", fields)
            }
        }
        if !firstRead {
            for gone in seen.keys where fresh[gone] == nil {
                logger.info("destination traffic policy cleared", [("destination", gone)])
            }
        }
        seen = fresh
        firstRead = false
    }

    private static func fields(_ row: DestinationsTable.Traffic) -> [(String, any Sendable)] {
        var fields: [(String, any Sendable)] = [("destination", row.destination)]
        if let cap = row.maxInFlight { fields.append(("max_in_flight", cap)) }
        if let rate = row.ratePerSecond { fields.append(("rate_per_second", rate)) }
        if let burst = row.burst { fields.append(("burst", burst)) }
        if let ms = row.slowStartMilliseconds { fields.append(("slow_start_ms", ms)) }
        if let pct = row.retryBudgetPercent { fields.append(("retry_budget_percent", pct)) }
        if row.paused { fields.append(("paused", true)) }
        return fields
    }
}
