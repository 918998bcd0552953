import CourierCore
import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Postgres
import Testing

/// A probe's verdict comes only from the destination's answer.
@Suite(.serialized) struct ProbeVerdictTests {
    @Test func aProbeTheAddressGuardRefusesClosesNothing() async throws {
        try await WorkerHarness.with { h in
            let destination = "http://127.0.0.1:\(h.server.port)"
            var policy = WorkerConfiguration(database: DatabaseConfiguration(connectionString: h.database.url)).breakerPolicy.reportPolicy
            policy.cooldownMilliseconds = 1
            #expect(try BreakersTable.report(destination: destination, successes: 0, failures: 10, trailingFailures: 10,
                                             worker: "test", policy: policy, on: h.db) == "open")
            _ = try h.enqueue("/probe")
            // This worker refuses loopback destinations: its probe is refused before anything is sent.
            try h.start(allowPrivateNetworks: false)
            let abandoned = try await h.eventually(timeout: .seconds(20)) {
                try h.db.query("select count(*)::bigint from courier.breaker_events where destination = \(destination) and reason = 'probe_abandoned'")
                    .rows[0].decode(0, as: Int.self) >= 1
            }
            #expect(abandoned, "the refused probe gave no verdict")
            let closed = try h.db.query("select count(*)::bigint from courier.breaker_events where destination = \(destination) and to_state = 'closed'")
                .rows[0].decode(0, as: Int.self)
            #expect(closed == 0, "a probe that never reached the destination does not close its breaker")
            #expect(h.server.requestCount() == 0)
        }
    }
}
