import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl enqueue --ndjson`: bulk, all or nothing, errors naming the line and field.
@Suite("jobctl enqueue --ndjson")
struct NDJSONEnqueueTests {
    static func lines(_ count: Int, queue: String = "bulk") -> String {
        var text = ""
        text.reserveCapacity(count * 60)
        for i in 0..<count {
            text += #"{"url": "http://example.com/items/\#(i)", "queue": "\#(queue)", "priority": \#(i % 7 - 3)}"# + "\n"
        }
        return text
    }

    @Test(arguments: [
        ("url", #"{"url": "http://example.com/a\u0000b"}"#),
        ("idempotency_key", #"{"url": "http://example.com/", "idempotency_key": "k\u0000"}"#),
        ("unique_key", #"{"url": "http://example.com/", "unique_key": "u\u0000"}"#),
        ("destination", #"{"url": "http://example.com/", "destination": "d\u0000"}"#),
        ("body", #"{"url": "http://example.com/", "body": "b\u0000"}"#),
    ])
    func aNULInAFieldNamesTheLineAndFieldAndEnqueuesNothing(_ field: String, _ line: String) throws {
        try ControlFixture.with { fixture throws in
            let file = try TemporaryFile(#"{"url": "http://example.com/ok"}"# + "\n" + line + "\n", suffix: ".ndjson")
            let result = fixture.run(["enqueue", "--ndjson", file.path])
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains("line 2: \(field):") && result.err.contains("NUL"), "\(result.err)")
            #expect(try fixture.int("select count(*)::bigint from courier.jobs") == 0)
        }
    }

    @Test func aHundredThousandLinesFromAFile() throws {
        try ControlFixture.with { fixture throws in
            let file = try TemporaryFile(Self.lines(100_000), suffix: ".ndjson")
            let result = fixture.run(["enqueue", "--ndjson", file.path, "--json"])
            #expect(result.status == 0, "\(result)")
            let summary = try result.object()
            #expect((summary["enqueued"] as? NSNumber)?.intValue == 100_000)
            #expect((summary["skipped_unique"] as? NSNumber)?.intValue == 0)
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where queue = 'bulk'") == 100_000)
            #expect(try fixture.int("select count(distinct idempotency_key)::bigint from courier.jobs") == 100_000)
            #expect(try fixture.int("select count(*)::bigint from courier.jobs where priority = -3") == 14_286)
            #expect(result.err.isEmpty, "no progress when standard error is not a terminal: \(result.err)")
        }
    }

    @Test(arguments: [true, false])
    func progressOnlyOnATerminal(_ terminal: Bool) throws {
        try ControlFixture.with { fixture throws in
            // Two COPY chunks of 20k, so progress is drawn more than once.
            let file = try TemporaryFile(Self.lines(30_000), suffix: ".ndjson")
            let result = fixture.run(["enqueue", "--ndjson", file.path], terminal: terminal)
            #expect(result.status == 0, "\(result)")
            #expect(result.out == "30000\n")
            if terminal {
                #expect(result.err.range(of: #"20000/30000 enqueued, 10000 left, [0-9]+/s, ~[0-9]+s left"#,
                                         options: .regularExpression) != nil, "\(result.err)")
                #expect(result.err.contains("30000/30000 enqueued, 0 left"), "\(result.err)")
                #expect(result.err.contains("/s"), "the rate is shown: \(result.err)")
                #expect(result.err.hasSuffix("\n"), "the progress line is finished")
            } else {
                #expect(result.err.isEmpty, "\(result.err)")
            }
        }
    }

    @Test func fromStandardInputBothWays() throws {
        try ControlFixture.with { fixture throws in
            let input = Data(Self.lines(3).utf8)
            let dash = fixture.run(["enqueue", "--ndjson", "-"], stdin: input)
            #expect(dash.status == 0, "\(dash)")
            #expect(dash.out == "3\n")
            let bare = fixture.run(["enqueue", "--ndjson"], stdin: input)
            #expect(bare.status == 0, "\(bare)")
            #expect(try fixture.jobCount == 6)
        }
    }

    @Test func blankLinesAndCRLFAreIgnored() throws {
        try ControlFixture.with { fixture throws in
            let input = "\n" + #"{"url": "http://example.com/1"}"# + "\r\n   \n\n" + #"{"url": "http://example.com/2"}"# + "\r\n\n"
            let result = fixture.run(["enqueue", "--ndjson"], stdin: Data(input.utf8))
            #expect(result.status == 0, "\(result)")
            #expect(result.out == "2\n")
            #expect(try fixture.jobCount == 2)
        }
    }

    @Test func aByteOrderMarkBeforeTheFirstLineIsSkipped() throws {
        try ControlFixture.with { fixture throws in
            let input = Data([0xEF, 0xBB, 0xBF]) + Data((#"{"url": "http://example.com/1"}"# + "\r\n" + #"{"url": "http://example.com/2"}"#).utf8)
            let result = fixture.run(["enqueue", "--ndjson"], stdin: input)
            #expect(result.status == 0, "\(result)")
            #expect(result.out == "2\n")
            // Anywhere else it is not whitespace, and the line is refused by number.
            let later = Data(#"{"url": "http://example.com/3"}"#.utf8) + Data([0x0A, 0xEF, 0xBB, 0xBF]) + Data(#"{"url": "http://example.com/4"}"#.utf8)
            let refused = fixture.run(["enqueue", "--ndjson"], stdin: later)
            #expect(refused.status == 2)
            #expect(refused.err.contains("--ndjson line 2: line: is not valid JSON"), "\(refused.err)")
            #expect(try fixture.jobCount == 2)
        }
    }

    @Test func idempotencyKeyNullAbsentAndGiven() throws {
        try ControlFixture.with { fixture throws in
            let input = """
                {"url": "http://example.com/none", "idempotency_key": null}
                {"url": "http://example.com/generated"}
                {"url": "http://example.com/given", "idempotency_key": "k-given"}
                """
            let result = fixture.run(["enqueue", "--ndjson"], stdin: Data(input.utf8))
            #expect(result.status == 0, "\(result)")
            var keys: [String: String?] = [:]
            for row in try fixture.db.query("select url, idempotency_key from courier.jobs").rows {
                keys[try row.decode(0, as: String.self)] = try row.decode(1, as: String?.self)
            }
            #expect(keys["http://example.com/none"] == .some(nil))
            let generated = try #require(keys["http://example.com/generated"] ?? nil)
            #expect(UUID(uuidString: generated) != nil)
            #expect(keys["http://example.com/given"] == "k-given")
        }
    }

    @Test func everyFieldIsStored() throws {
        try ControlFixture.with { fixture throws in
            let line = """
                {"url": "https://api.example.com/v1", "method": "patch", "headers": {"X-A": "1", "Authorization": {"secret": "partner_token"}}, \
                "body": {"b": [1, 2]}, "queue": "q1", "priority": -5, "run_at": "2031-02-03T04:05:06Z", "max_attempts": 3, \
                "deadline": "2031-02-04T00:00:00.250Z", "idempotency_key": "k", "unique_key": "u", "destination": "partner", \
                "timeout_ms": 1500, "expect_content_type": "application/json"}
                """
            let result = fixture.run(["enqueue", "--ndjson"], stdin: Data(line.utf8))
            #expect(result.status == 0, "\(result)")
            let row = try #require(try fixture.db.query("""
                select method, headers, body, queue, priority, run_at, max_attempts, deadline, idempotency_key, unique_key,
                       destination, timeout_ms, expect_content_type from courier.jobs
                """).rows.first)
            #expect(try row.decode(0, as: String.self) == "PATCH")
            let headers = try JSONSerialization.jsonObject(with: Data(try row.decode(1, as: String.self).utf8)) as? [String: Any]
            #expect(headers?["X-A"] as? String == "1")
            #expect((headers?["Authorization"] as? [String: String]) == ["secret": "partner_token"])
            #expect(try row.decode(2, as: String.self) == #"{"b": [1, 2]}"#, "a JSON body is stored exactly as written")
            #expect(try row.decode(3, as: String.self) == "q1")
            #expect(try row.decode(4, as: Int.self) == -5)
            #expect(try row.decode(5, as: Date.self) == Date(timeIntervalSince1970: 1_927_857_906))
            #expect(try row.decode(6, as: Int.self) == 3)
            #expect(try row.decode(7, as: Date.self) == Date(timeIntervalSince1970: 1_927_929_600.25))
            #expect(try row.decode(8, as: String.self) == "k")
            #expect(try row.decode(9, as: String.self) == "u")
            #expect(try row.decode(10, as: String.self) == "partner")
            #expect(try row.decode(11, as: Int.self) == 1500)
            #expect(try row.decode(12, as: String.self) == "application/json")
        }
    }

    static let good = #"{"url": "http://example.com/ok"}"#

    @Test(arguments: [
        (#"{"url": "http://example.com/x", "colour": "red"}"#, "colour"),
        (#"{"url": "http://example.com/x", "priority": "high"}"#, "priority"),
        (#"{"url": "http://example.com/x", "priority": 1.5}"#, "priority"),
        (#"{"url": "http://example.com/x", "max_attempts": true}"#, "max_attempts"),
        (#"{"url": "ftp://example.com/x"}"#, "url"),
        (#"{"url": 42}"#, "url"),
        (#"{"method": "GET"}"#, "url"),
        (#"{"url": "http://example.com/x", "deadline": "2001-01-01T00:00:00Z"}"#, "deadline"),
        (#"{"url": "http://example.com/x", "deadline": "next week"}"#, "deadline"),
        (#"{"url": "http://example.com/x", "run_at": 12}"#, "run_at"),
        (#"{"url": "http://example.com/x", "headers": ["X-A: 1"]}"#, "headers"),
        (#"{"url": "http://example.com/x", "headers": {"X-A": 1}}"#, "headers"),
        (#"{"url": "http://example.com/x", "queue": ""}"#, "queue"),
        (#"{"url": "http://example.com/x", "timeout_ms": 0}"#, "timeout_ms"),
        (#"{"url": "http://example.com/x", "expect_content_type": "json"}"#, "expect_content_type"),
        (#"{"url": "http://example.com/x", "idempotency_key": 7}"#, "idempotency_key"),
        (#"{"url": "http://example.com/x""#, "line"),
        (#"["http://example.com/x"]"#, "line"),
    ])
    func aBadLineNamesItsNumberAndFieldAndEnqueuesNothing(_ bad: String, _ field: String) throws {
        try ControlFixture.with { fixture throws in
            // Lines 1, 2 and 4 are good, 3 is blank (still counted), 5 is bad, 6 is good.
            let input = [Self.good, Self.good, "", Self.good, bad, Self.good].joined(separator: "\n") + "\n"
            let file = try TemporaryFile(input, suffix: ".ndjson")
            let result = fixture.run(["enqueue", "--ndjson", file.path])
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains("line 5"), "\(result.err)")
            #expect(result.err.contains(field), "the message should name \(field): \(result.err)")
            #expect(result.err.contains("nothing was enqueued"), "\(result.err)")
            #expect(try fixture.jobCount == 0, "all or nothing")
        }
    }

    @Test func aBadLineDeepInALargeFileEnqueuesNothing() throws {
        try ControlFixture.with { fixture throws in
            var text = Self.lines(50_000)
            text += #"{"url": "http://example.com/x", "max_attempts": 0}"# + "\n"
            text += Self.lines(10)
            let file = try TemporaryFile(text, suffix: ".ndjson")
            let result = fixture.run(["enqueue", "--ndjson", file.path])
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains("line 50001"), "\(result.err)")
            #expect(result.err.contains("max_attempts"), "\(result.err)")
            #expect(try fixture.jobCount == 0)
        }
    }

    @Test func uniqueKeysAlreadyHeldAreSkippedAndCounted() throws {
        try ControlFixture.with { fixture throws in
            try fixture.enqueue { $0.uniqueKey = "held" }
            let input = """
                {"url": "http://example.com/1", "unique_key": "held"}
                {"url": "http://example.com/2", "unique_key": "fresh"}
                {"url": "http://example.com/3", "unique_key": "fresh"}
                {"url": "http://example.com/4"}
                """
            let result = fixture.run(["enqueue", "--ndjson", "--json"], stdin: Data(input.utf8))
            #expect(result.status == 0, "\(result)")
            let summary = try result.object()
            #expect((summary["enqueued"] as? NSNumber)?.intValue == 2)
            #expect((summary["skipped_unique"] as? NSNumber)?.intValue == 2)
            #expect(try fixture.jobCount == 3)
        }
    }

    @Test func emptyInputOrMissingFileIsBadInput() throws {
        try ControlFixture.with { fixture throws in
            let empty = fixture.run(["enqueue", "--ndjson"], stdin: Data("\n\n".utf8))
            #expect(empty.status == 2, "\(empty)")
            #expect(empty.err.contains("--ndjson"))
            let missing = fixture.run(["enqueue", "--ndjson", "/nonexistent/jobs.ndjson"])
            #expect(missing.status == 2, "\(missing)")
            #expect(missing.err.contains("--ndjson") && missing.err.contains("cannot read"))
            #expect(try fixture.jobCount == 0)
        }
    }

    @Test func perJobFlagsCannotBeMixedWithNDJSON() throws {
        try ControlFixture.with { fixture throws in
            let result = fixture.run(["enqueue", "--ndjson", "-", "--queue", "q"], stdin: Data(Self.good.utf8))
            #expect(result.status == 2)
            #expect(result.err.contains("--queue"))
            #expect(try fixture.jobCount == 0)
        }
    }
}
