import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl dead list / show / replay / purge`: filters, agreement between list and
/// replay, --limit, --force, purge, bad values, progress and exit codes.
@Suite("jobctl dead")
struct DeadLetterCommandTests {
    static let apiA = "https://a.example.com:443"
    static let apiB = "https://b.example.com:443"

    /// A spread of dead letters over reasons, destinations, queues, classes, statuses and ages.
    /// Returns name → id.
    func seed(_ fixture: ControlFixture) throws -> [String: Int64] {
        [
            "a-exhausted-500-1h": try fixture.deadLetter(reason: "exhausted", destination: Self.apiA, queue: "q1",
                                                         lastClass: "server", lastStatus: 500, failedAgo: 3600),
            "a-exhausted-503-10m": try fixture.deadLetter(reason: "exhausted", destination: Self.apiA, queue: "q2",
                                                          lastClass: "server", lastStatus: 503, failedAgo: 600),
            "a-exhausted-timeout-5m": try fixture.deadLetter(reason: "exhausted", destination: Self.apiA, queue: "q1",
                                                             lastClass: "timeout", lastStatus: nil, failedAgo: 300),
            "a-permanent-404-2h": try fixture.deadLetter(reason: "permanent", destination: Self.apiA, queue: "q1",
                                                         lastClass: "client", lastStatus: 404, failedAgo: 7200),
            "b-exhausted-500-30m": try fixture.deadLetter(reason: "exhausted", destination: Self.apiB, queue: "q1",
                                                          lastClass: "server", lastStatus: 500, failedAgo: 1800),
            "b-deadline-2d": try fixture.deadLetter(reason: "deadline", destination: Self.apiB, queue: "q2",
                                                    lastClass: "transport", lastStatus: nil, failedAgo: 172_800),
            "b-ambiguous-1m": try fixture.deadLetter(reason: "ambiguous", destination: Self.apiB, queue: "q1",
                                                     lastClass: "connection_lost", lastStatus: nil, failedAgo: 60),
            "a-exhausted-500-replayed": try fixture.deadLetter(reason: "exhausted", destination: Self.apiA, queue: "q1",
                                                               lastClass: "server", lastStatus: 500, failedAgo: 900,
                                                               replayed: true),
        ]
    }

    func listed(_ fixture: ControlFixture, _ filters: [String]) throws -> Set<Int64> {
        let result = fixture.run(["dead", "list", "--limit", "1000", "--json"] + filters)
        // 3 means nothing matched, as everywhere in jobctl.
        #expect(result.status == (try result.array().isEmpty ? 3 : 0), "\(result)")
        return Set(try result.array().compactMap { ($0["id"] as? NSNumber)?.int64Value })
    }

    static let combinations: [([String], [String])] = [
        ([], ["a-exhausted-500-1h", "a-exhausted-503-10m", "a-exhausted-timeout-5m", "a-permanent-404-2h",
              "b-exhausted-500-30m", "b-deadline-2d", "b-ambiguous-1m", "a-exhausted-500-replayed"]),
        (["--reason", "exhausted", "--destination", apiA],
         ["a-exhausted-500-1h", "a-exhausted-503-10m", "a-exhausted-timeout-5m", "a-exhausted-500-replayed"]),
        (["--reason", "exhausted", "--reason", "deadline", "--destination", apiB], ["b-exhausted-500-30m", "b-deadline-2d"]),
        (["--class", "server", "--status", "500"], ["a-exhausted-500-1h", "b-exhausted-500-30m", "a-exhausted-500-replayed"]),
        (["--status", "500", "--status", "503", "--queue", "q2"], ["a-exhausted-503-10m"]),
        (["--since", "-45m", "--until", "-2m"], ["a-exhausted-503-10m", "a-exhausted-timeout-5m", "b-exhausted-500-30m",
                                                 "a-exhausted-500-replayed"]),
        (["--since", "-45m", "--destination", apiA, "--class", "server"], ["a-exhausted-503-10m", "a-exhausted-500-replayed"]),
        (["--until", "-1d"], ["b-deadline-2d"]),
        (["--class", "transport", "--class", "connection_lost", "--queue", "q1"], ["b-ambiguous-1m"]),
        (["--reason", "cancelled"], []),
    ]

    @Test(arguments: combinations)
    func listFiltersInCombination(_ filters: [String], _ expected: [String]) throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            #expect(try listed(fixture, filters) == Set(expected.map { ids[$0]! }))
        }
    }

    @Test(arguments: combinations.filter { !$0.0.isEmpty })
    func dryRunAndReplayAgreeWithList(_ filters: [String], _ expected: [String]) throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            // Replay skips what was replayed before; list shows everything.
            let replayable = Set(expected.filter { $0 != "a-exhausted-500-replayed" }.map { ids[$0]! })
            let dry = fixture.run(["dead", "replay", "--dry-run", "--json"] + filters)
            #expect(dry.status == 0, "\(dry)")
            #expect((try dry.object()["replayed"] as? NSNumber)?.intValue == replayable.count)
            #expect(try fixture.replayedIDs() == [ids["a-exhausted-500-replayed"]!], "a dry run changes nothing")
            #expect(try fixture.jobCount == 0)

            let replay = fixture.run(["dead", "replay", "--json"] + filters)
            #expect(replay.status == 0, "\(replay)")
            #expect((try replay.object()["replayed"] as? NSNumber)?.intValue == replayable.count)
            #expect(try fixture.replayedIDs() == replayable.union([ids["a-exhausted-500-replayed"]!]))
            #expect(try fixture.jobCount == replayable.count)
        }
    }

    @Test func listShowsTheNewestFirstUpToTheLimit() throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            let result = fixture.run(["dead", "list", "--limit", "3", "--json"])
            #expect(try result.array().compactMap { ($0["id"] as? NSNumber)?.int64Value }
                    == [ids["b-ambiguous-1m"]!, ids["a-exhausted-timeout-5m"]!, ids["a-exhausted-503-10m"]!])
            let byID = try fixture.run(["dead", "list", "--id", String(ids["b-deadline-2d"]!), "--json"]).array()
            #expect(byID.count == 1)
            #expect(byID.first?["reason"] as? String == "deadline")
            #expect(byID.first?["replayed_at"] == nil || byID.first?["replayed_at"] is NSNull)
            let text = fixture.run(["dead", "list", "--reason", "permanent"])
            #expect(text.status == 0)
            #expect(text.out.hasPrefix("ID"))
            #expect(text.out.contains("client") && text.out.contains("404"))
        }
    }

    @Test func showADeadLetterWithItsHistory() throws {
        try ControlFixture.with { fixture throws in
            let id = try fixture.deadLetter(reason: "exhausted", destination: Self.apiA, lastClass: "server", lastStatus: 502,
                                            key: "key-show")
            let json = try fixture.run(["dead", "show", String(id), "--json"]).object()
            #expect(json["reason"] as? String == "exhausted")
            #expect(json["idempotency_key"] as? String == "key-show")
            #expect((json["attempt"] as? NSNumber)?.intValue == 2)
            #expect((json["errors"] as? [[String: Any]])?.count == 2)
            let text = fixture.run(["dead", "show", String(id)])
            #expect(text.status == 0)
            #expect(text.out.contains("last error:      server (HTTP 502)"), "\(text.out)")
            #expect(text.out.contains("history:"))
            #expect(text.out.contains("#2 server 502"), "\(text.out)")
            let unknown = fixture.run(["dead", "show", "999999"])
            #expect(unknown.status == 3, "\(unknown)")
            #expect(fixture.run(["dead", "show", "x"]).status == 2)
        }
    }

    @Test func replayLimitTakesTheOldestFirst() throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            let result = fixture.run(["dead", "replay", "--reason", "exhausted", "--limit", "2"])
            #expect(result.status == 0, "\(result)")
            #expect(result.out.hasPrefix("replayed 2 dead letters"), "\(result.out)")
            #expect(try fixture.replayedIDs() == [ids["a-exhausted-500-1h"]!, ids["b-exhausted-500-30m"]!,
                                                 ids["a-exhausted-500-replayed"]!])
        }
    }

    @Test func replayByIDsOnceThenExit3UnlessForced() throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            let chosen = [ids["a-permanent-404-2h"]!, ids["b-deadline-2d"]!].map(String.init)
            let first = fixture.run(["dead", "replay"] + chosen)
            #expect(first.status == 0, "\(first)")
            #expect(first.out.hasPrefix("replayed 2 dead letters"))
            let again = fixture.run(["dead", "replay"] + chosen)
            #expect(again.status == 3, "\(again)")
            #expect(again.out.hasPrefix("replayed 0 dead letters"))
            #expect(again.err.contains("--force"))
            #expect(try fixture.jobCount == 2)

            let forced = fixture.run(["dead", "replay", "--force"] + chosen)
            #expect(forced.status == 0, "\(forced)")
            #expect(forced.out.hasPrefix("replayed 2 dead letters"), "each forced row once, not in a loop: \(forced.out)")
            #expect(try fixture.jobCount == 4)
            let replayJobs = try fixture.db.query("""
                select replay_job_id from courier.dead_letters where id = any(\(chosen.map { Int64($0)! }))
                """).rows.map { try $0.decode(0, as: Int64.self) }
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where id = any(\(replayJobs))") == 2,
                    "replay_job_id points at the newest replay")

            #expect(fixture.run(["dead", "replay", "123456789"]).status == 3, "unknown ids exit 3")
        }
    }

    @Test func filtersThatMatchNothingLeftExit0() throws {
        try ControlFixture.with { fixture throws in
            _ = try seed(fixture)
            let first = fixture.run(["dead", "replay", "--destination", Self.apiB])
            #expect(first.status == 0)
            #expect(first.out.hasPrefix("replayed 3 dead letters"), "\(first.out)")
            let second = fixture.run(["dead", "replay", "--destination", Self.apiB])
            #expect(second.status == 0, "\(second)")
            #expect(second.out == "replayed 0 dead letters\n")
            let all = fixture.run(["dead", "replay", "--all", "--json"])
            #expect((try all.object()["replayed"] as? NSNumber)?.intValue == 4)
            #expect((try fixture.run(["dead", "replay", "--all", "--json"]).object()["replayed"] as? NSNumber)?.intValue == 0)
        }
    }

    @Test func forceReplaysEveryMatchingRowExactlyOnceAcrossChunks() throws {
        try ControlFixture.with { fixture throws in
            // More rows than one replay chunk holds, all replayed before.
            try TestRows(fixture.db).deadLetters(12_000, destination: "https://c.example.com:443", url: "https://c.example.com/x",
                                                 failedAgo: .seconds(1800), replayedAgo: .seconds(600))
            let result = fixture.run(["dead", "replay", "--all", "--force", "--json"])
            #expect(result.status == 0, "\(result)")
            #expect((try result.object()["replayed"] as? NSNumber)?.intValue == 12_000)
            #expect(try fixture.jobCount == 12_000)
            #expect(try fixture.int("select count(distinct replay_job_id)::bigint from courier.dead_letters") == 12_000)
        }
    }

    @Test func aSecondForcedReplayIsRefusedWhileOneRuns() throws {
        try ControlFixture.with { fixture throws in
            try fixture.deadLetter(failedAgo: 100, replayed: true)
            // Another forced replay holds the lock (this session stands in for it).
            #expect(try DeadLettersTable.tryLockForcedReplay(on: fixture.db))
            let refused = fixture.run(["dead", "replay", "--all", "--force"])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.err.contains("another 'jobctl dead replay --force' is running"), "\(refused.err)")
            #expect(try fixture.jobCount == 0, "nothing replayed")
            try DeadLettersTable.unlockForcedReplay(on: fixture.db)
            let forced = fixture.run(["dead", "replay", "--all", "--force"])
            #expect(forced.status == 0, "\(forced)")
            #expect(try fixture.jobCount == 1)
        }
    }

    @Test func dryRunPrintsACountPerDestination() throws {
        try ControlFixture.with { fixture throws in
            _ = try seed(fixture)
            let text = fixture.run(["dead", "replay", "--all", "--dry-run", "--rate", "2/s"])
            #expect(text.status == 0, "\(text)")
            let lines = text.out.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("DESTINATION") == true, "\(text.out)")
            #expect(lines.contains { $0.hasPrefix(Self.apiA) && $0.hasSuffix(" 4") }, "\(text.out)")
            #expect(lines.contains { $0.hasPrefix(Self.apiB) && $0.hasSuffix(" 3") }, "\(text.out)")
            #expect(lines.last?.hasPrefix("dry run: 7 dead letters would be replayed, over about 3.0s at 2/s") == true, "\(text.out)")
            let json = try fixture.run(["dead", "replay", "--all", "--dry-run", "--json"]).object()
            #expect(json["dry_run"] as? Bool == true)
            #expect((json["by_destination"] as? [String: NSNumber])?.mapValues(\.intValue) == [Self.apiA: 4, Self.apiB: 3])
            #expect(try fixture.jobCount == 0)
            #expect(try fixture.replayedIDs().count == 1)
        }
    }

    @Test func purgeByIDsAndByAge() throws {
        try ControlFixture.with { fixture throws in
            let ids = try seed(fixture)
            let byID = fixture.run(["dead", "purge", String(ids["b-ambiguous-1m"]!), String(ids["a-permanent-404-2h"]!)])
            #expect(byID.status == 0, "\(byID)")
            #expect(byID.out == "purged 2 dead letters\n")
            #expect(try fixture.deadLetterCount == 6)
            let again = fixture.run(["dead", "purge", String(ids["b-ambiguous-1m"]!)])
            #expect(again.status == 3, "\(again)")

            // Older than 50 minutes: the 1h and 2d ones (2h was purged above).
            let byAge = fixture.run(["dead", "purge", "--older-than", "50m", "--json"])
            #expect(byAge.status == 0, "\(byAge)")
            #expect((try byAge.object()["purged"] as? NSNumber)?.intValue == 2)
            #expect(try fixture.int("select count(*)::bigint from courier.dead_letters where failed_at < now() - interval '50 minutes'") == 0)
            #expect(try fixture.deadLetterCount == 4)
            let none = fixture.run(["dead", "purge", "--older-than", "30d"])
            #expect(none.status == 0, "an age that matches nothing is not an error: \(none)")
            #expect(none.out == "purged 0 dead letters\n")
        }
    }

    @Test(arguments: [
        (["dead", "list", "--reason", "bogus"], "--reason"),
        (["dead", "list", "--class", "weird"], "--class"),
        (["dead", "list", "--status", "abc"], "--status"),
        (["dead", "list", "--status", "99"], "--status"),
        (["dead", "list", "--since", "yesterdayish"], "--since"),
        (["dead", "list", "--until", "2024-13-01"], "--until"),
        (["dead", "list", "--since", "-1h", "--until", "-2h"], "--until"),
        (["dead", "list", "--limit", "0"], "--limit"),
        (["dead", "list", "--id", "x"], "--id"),
        (["dead", "replay", "--reason", "bogus"], "--reason"),
        (["dead", "replay", "--status", "abc"], "--status"),
        (["dead", "replay", "--since", "yesterdayish"], "--since"),
        (["dead", "replay", "--since", "2024-05-02", "--until", "2024-05-01"], "--until"),
        (["dead", "replay", "--all", "--rate", "0"], "--rate"),
        (["dead", "replay", "--all", "--rate", "x/s"], "--rate"),
        (["dead", "replay", "--all", "--rate", "-5/s"], "--rate"),
        (["dead", "replay", "--all", "--rate", "20/fortnight"], "--rate"),
        (["dead", "replay", "--all", "--limit", "0"], "--limit"),
        (["dead", "replay", "--all", "--reason", "exhausted"], "--reason"),
        (["dead", "replay", "abc"], "ID"),
        (["dead", "replay"], "--all"),
        (["dead", "purge", "--older-than", "soon"], "--older-than"),
        (["dead", "purge", "--older-than", "0s"], "--older-than"),
        (["dead", "purge", "0"], "ID"),
    ])
    func badValuesExit2AndNameTheFlag(_ arguments: [String], _ flag: String) throws {
        try ControlFixture.with { fixture throws in
            _ = try seed(fixture)
            let result = fixture.run(arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains(flag), "should name \(flag): \(result.err)")
            #expect(try fixture.jobCount == 0)
            #expect(try fixture.deadLetterCount == 8)
            #expect(try fixture.replayedIDs().count == 1)
        }
    }

    @Test(arguments: [true, false])
    func longReplayShowsProgressOnlyOnATerminal(_ terminal: Bool) throws {
        try ControlFixture.with { fixture throws in
            try TestRows(fixture.db).deadLetters(12_000, destination: "https://c.example.com:443", url: "https://c.example.com/x",
                                                 failedAgo: .seconds(1800))
            let result = fixture.run(["dead", "replay", "--all", "--rate", "1000/s"], terminal: terminal)
            #expect(result.status == 0, "\(result)")
            #expect(result.out.hasPrefix("replayed 12000 dead letters (https://c.example.com:443: 12000), paced over 12.0s at 1000/s"),
                    "the summary at the end: \(result.out)")
            if terminal {
                // After the first chunk of 5000: done, left, rate and time left; then the end.
                #expect(result.err.contains("5000/12000 replayed, 7000 left, "), "\(result.err)")
                #expect(result.err.range(of: #"7000 left, [0-9]+/s, ~[0-9]+s left"#, options: .regularExpression) != nil,
                        "\(result.err)")
                #expect(result.err.contains("12000/12000 replayed, 0 left, "), "\(result.err)")
                #expect(result.err.hasSuffix("\n"))
            } else {
                #expect(result.err.isEmpty, "no progress off a terminal: \(result.err)")
            }
        }
    }

    @Test func jsonReplayPrintsOnlyTheSummaryEvenOnATerminal() throws {
        try ControlFixture.with { fixture throws in
            _ = try seed(fixture)
            let result = fixture.run(["dead", "replay", "--all", "--rate", "10/s", "--json"], terminal: true)
            #expect(result.status == 0, "\(result)")
            #expect(result.err.isEmpty, "\(result.err)")
            let summary = try result.object()
            #expect((summary["replayed"] as? NSNumber)?.intValue == 7)
            #expect((summary["rate_per_second"] as? NSNumber)?.doubleValue == 10)
            #expect((summary["by_destination"] as? [String: NSNumber])?.mapValues(\.intValue) == [Self.apiA: 4, Self.apiB: 3])
            let first = try #require((summary["first_run_at"] as? String).flatMap { try? Timestamp.parse($0, field: "t") })
            let last = try #require((summary["last_run_at"] as? String).flatMap { try? Timestamp.parse($0, field: "t") })
            #expect(abs(last.timeIntervalSince(first) - 0.6) < 0.001)
        }
    }
}
