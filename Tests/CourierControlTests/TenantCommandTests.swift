import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl tenant set|reset`, `jobctl tenants`, and the fairness key through `jobctl enqueue`,
/// `show` and `list` (issue 42).
@Suite struct TenantCommandTests {
    @Test func setResetAndTenantsShowWeightsCapsAndLoad() throws {
        try ControlFixture.with { fixture throws in
            let set = fixture.run(["tenant", "set", "customer-42", "--weight", "4", "--max-in-flight", "20", "--json"])
            #expect(set.status == 0, "\(set.err)")
            let row = try set.object()
            #expect(row["fairness_key"] as? String == "customer-42" && row["weight"] as? Int == 4 && row["max_in_flight"] as? Int == 20)
            // A second set changes only what it names; --no-max-in-flight clears the cap.
            let cleared = try fixture.run(["tenant", "set", "customer-42", "--no-max-in-flight", "--json"]).object()
            #expect(cleared["weight"] as? Int == 4 && cleared["max_in_flight"] is NSNull, "\(cleared)")

            let enqueued = fixture.run(["enqueue", "--url", "https://example.com/hook", "--fairness-key", "customer-7"])
            #expect(enqueued.status == 0, "\(enqueued.err)")
            let id = enqueued.out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(fixture.run(["show", id]).out.contains("fairness key:    customer-7"))
            let listed = try fixture.run(["list", "--fairness-key", "customer-7", "--json"]).array()
            #expect(listed.count == 1 && listed.first?["fairness_key"] as? String == "customer-7")
            #expect(fixture.run(["list", "--fairness-key", "nobody"]).status == 3)

            let tenants = try fixture.run(["tenants", "--json"]).array()
            let byKey = Dictionary(uniqueKeysWithValues: tenants.map { ($0["fairness_key"] as! String, $0) })
            #expect((byKey["customer-7"]?["waiting"] as? [String: Any])?["value"] as? Int == 1, "\(tenants)")
            #expect(byKey["customer-7"]?["declared"] as? Bool == false, "a key with jobs and no settings is listed")
            #expect(byKey["customer-42"]?["weight"] as? Int == 4)
            #expect(fixture.run(["tenants"]).out.hasPrefix("KEY"))

            #expect(fixture.run(["tenant", "reset", "customer-42"]).status == 0)
            #expect(fixture.run(["tenant", "reset", "customer-42"]).status == 3, "nothing left to reset")
        }
    }

    @Test func badValuesAreRefusedNamingTheFlagAndChangeNothing() throws {
        try ControlFixture.with { fixture throws in
            for (arguments, message) in [
                (["tenant", "set", "k", "--weight", "0"], "--weight: must be between 1 and 1000"),
                (["tenant", "set", "k", "--max-in-flight", "0"], "--max-in-flight: must be between 1 and 1000000"),
                (["tenant", "set", "has space", "--weight", "2"], "KEY: must be 1 to 128 printable ASCII characters"),
                (["tenant", "set", "k"], "expected one of --weight, --max-in-flight, --no-max-in-flight"),
                (["enqueue", "--url", "https://example.com/x", "--fairness-key", "a b"], "--fairness-key: must be 1 to 128"),
            ] {
                let result = fixture.run(arguments)
                #expect(result.status == 2 && result.err.contains(message), "\(arguments): \(result.err)")
            }
            #expect(try fixture.db.query("select count(*)::bigint from courier.tenants").rows[0].decode(0, as: Int.self) == 0)
            #expect(try fixture.db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
        }
    }
}
