import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl destination set|reset|pause|resume`, `jobctl destinations` and `jobctl queue pause|resume`.
@Suite struct TrafficCommandTests {
    @Test func setShowsMergesAndDestinationsListsLimitsAndLoad() throws {
        try ControlFixture.with { fixture throws in
            let set = fixture.run(["destination", "set", "https://API.partner.example/hooks", "--max-in-flight", "10",
                                   "--rate", "50/s", "--burst", "5", "--slow-start", "3s", "--retry-budget", "20%", "--json"])
            #expect(set.status == 0, "\(set.err)")
            let row = try set.object()
            #expect(row["destination"] as? String == "https://api.partner.example:443")
            #expect(row["max_in_flight"] as? Int == 10)
            #expect(row["rate_per_second"] as? Double == 50)
            #expect(row["burst"] as? Int == 5)
            #expect(row["slow_start_ms"] as? Int == 3000)
            #expect(row["retry_budget_percent"] as? Double == 20)
            #expect(row["paused"] as? Bool == false)

            // A second set changes only what it names.
            let second = fixture.run(["destination", "set", "https://api.partner.example", "--rate", "300/m", "--json"])
            #expect(second.status == 0, "\(second.err)")
            let merged = try second.object()
            #expect(merged["rate_per_second"] as? Double == 5)
            #expect(merged["max_in_flight"] as? Int == 10)

            var job = EnqueueRequest(url: "https://api.partner.example/hooks")
            job.queue = "default"
            _ = try JobsTable.enqueue(job, on: fixture.db)
            let list = fixture.run(["destinations"])
            #expect(list.status == 0 && list.out.hasPrefix("DESTINATION"), "\(list)")
            #expect(list.out.contains("https://api.partner.example:443") && list.out.contains("5/s"), "\(list.out)")
            let json = try fixture.run(["destinations", "--json"]).array()
            #expect(json.count == 1)
            #expect(json.first?["waiting"] as? Int == 1)
            #expect(json.first?["in_flight"] as? Int == 0)
            #expect(json.first?["breaker_state"] as? String == "closed")

            let reset = fixture.run(["destination", "reset", "https://api.partner.example"])
            #expect(reset.status == 0, "\(reset)")
            #expect(fixture.run(["destination", "reset", "https://api.partner.example"]).status == 3)
        }
    }

    @Test func pauseAndResumeAreShown() throws {
        try ControlFixture.with { fixture throws in
            let pause = fixture.run(["destination", "pause", "https://slow.example", "--json"])
            #expect(pause.status == 0, "\(pause.err)")
            #expect(try pause.object()["paused"] as? Bool == true)
            #expect(try fixture.run(["destinations", "--json"]).array().first?["paused"] as? Bool == true)
            #expect(fixture.run(["stats"]).out.contains("destinations https://slow.example:443"), "stats shows the pause")
            #expect(try fixture.run(["destination", "resume", "https://slow.example", "--json"]).object()["paused"] as? Bool == false)

            #expect(fixture.run(["queue", "pause", "webhooks"]).status == 0)
            let queues = try fixture.run(["queues", "--json"]).array()
            #expect(queues.first?["queue"] as? String == "webhooks" && queues.first?["paused"] as? Bool == true, "\(queues)")
            #expect(fixture.run(["queues"]).out.contains("PAUSED"))
            let stats = try fixture.run(["stats", "--json"]).object()
            #expect((stats["paused"] as? [String: [String]])?["queues"] == ["webhooks"], "\(stats)")
            #expect(fixture.run(["queue", "resume", "webhooks"]).status == 0)
            #expect(try fixture.run(["queues", "--json"]).array().first?["paused"] as? Bool == false)
            #expect(fixture.run(["queue", "pause", "bad queue!"]).status == 2)
        }
    }

    @Test func badPolicyInputExitsTwoNamingTheFlag() throws {
        try ControlFixture.with { fixture throws in
            for (arguments, flag) in [
                (["--max-in-flight", "0"], "--max-in-flight"),
                (["--max-in-flight=-3"], "--max-in-flight"),
                (["--max-in-flight", "ten"], "--max-in-flight"),
                (["--rate", "banana"], "--rate"),
                (["--rate", "0/s"], "--rate"),
                (["--rate=-5/s"], "--rate"),
                (["--burst", "0"], "--burst"),
                (["--slow-start", "forever"], "--slow-start"),
                (["--retry-budget", "120%"], "--retry-budget"),
                (["--retry-budget", "lots"], "--retry-budget"),
            ] {
                let result = fixture.run(["destination", "set", "https://x.example"] + arguments)
                #expect(result.status == 2, "\(arguments): \(result)")
                #expect(result.err.contains(flag), "\(arguments): \(result.err)")
            }
            let none = fixture.run(["destination", "set", "https://x.example"])
            #expect(none.status == 2, "\(none)")
            #expect(try DestinationsTable.all(on: fixture.db).isEmpty, "nothing was stored")
        }
    }
}
