import CourierControl
import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 18, jobctl's doors: hostile values are refused with exit 2 naming the flag or
/// field, stored hostile text cannot drive the terminal, and tokens in URL queries are
/// never printed.
@Suite struct HostileInputCommandTests {
    /// Item 9: `--method ''` is refused, not read as POST.
    @Test func anEmptyMethodIsRefused() throws {
        try ControlFixture.with { (f) throws in
            let result = f.run(["enqueue", "--url", "https://hooks.example/x", "--method", ""])
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains("--method"), "\(result.err)")
            #expect(try f.jobCount == 0)
        }
    }

    /// Item 4: more headers than the limit are refused at jobctl's door, naming --header.
    @Test func tooManyHeaderFlagsAreRefused() throws {
        try ControlFixture.with { (f) throws in
            var arguments = ["enqueue", "--url", "https://hooks.example/x"]
            for index in 0...HeaderRules.maximumCount { arguments += ["--header", "X-H\(index): v"] }
            let result = f.run(arguments)
            #expect(result.status == 2, "\(result)")
            #expect(result.err.contains("--header") && result.err.contains("more than \(HeaderRules.maximumCount) headers"), "\(result.err)")
            #expect(try f.jobCount == 0)
        }
    }

    /// Items 4 and 6: one NDJSON line with 100,000 headers is refused (it used to take
    /// minutes of pairwise duplicate checks), with its line and field, and nothing is enqueued.
    @Test func anNDJSONLineWithAHundredThousandHeadersIsRefused() throws {
        try ControlFixture.with { (f) throws in
            var line = #"{"url": "https://hooks.example/x", "headers": {"#
            line += (0..<100_000).map { #""X-H\#($0)": "v""# }.joined(separator: ",")
            line += "}}\n"
            let good = #"{"url": "https://hooks.example/ok"}"# + "\n"
            let file = try TemporaryFile(good + line, suffix: ".ndjson")
            let result = f.run(["enqueue", "--ndjson", file.path])
            #expect(result.status == 2, "\(result.err)")
            #expect(result.err.contains("line 2") && result.err.contains("headers"), "\(result.err)")
            #expect(try f.jobCount == 0)
        }
    }

    /// Item 10: a unique key written with ESC, CR and LF through SQL cannot clear the
    /// operator's screen or fake lines in `jobctl show` and `jobctl list`.
    @Test func storedControlCharactersAreEscapedInTextOutput() throws {
        try ControlFixture.with { (f) throws in
            let hostile = "k\u{1B}[2J\u{1B}[H\r\nstatus: succeeded\u{9B}31m"
            let id = try f.db.query("select courier.enqueue(url => 'https://hooks.example/x', unique_key => \(hostile))")
                .rows[0].decode(0, as: Int64.self)
            // A dead letter's URL is plain text (rows from before the URL rules, or written by hand).
            try f.deadLetter(url: "https://hooks.example/\u{1B}]0;owned\u{07}\r\nfake")
            for arguments in [["show", String(id)], ["dead", "list"]] {
                let result = f.run(arguments)
                #expect(result.status == 0, "\(result)")
                #expect(!result.out.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\r" || $0 == "\u{9B}" || $0 == "\u{07}" },
                        "\(arguments): \(result.out)")
                #expect(!result.out.contains("\nstatus: succeeded") && !result.out.contains("\nfake"),
                        "a stored line break must not start a line: \(result.out)")
                #expect(result.out.contains(#"\e"#), "the escape is shown: \(result.out)")
            }
            // JSON keeps the exact value (escaped by JSON itself).
            let json = try f.run(["show", String(id), "--json"]).object()
            #expect(json["unique_key"] as? String == hostile)
        }
    }

    /// Item 8: tokens in URL queries are redacted in show, list and dead views, text and JSON.
    @Test func secretLookingQueryValuesAreRedacted() throws {
        try ControlFixture.with { (f) throws in
            let url = "https://hooks.example/x?api_key=tok-QUERY-1&user=ann&signature=tok-QUERY-2&access_token=tok-QUERY-3#frag"
            let id = try f.enqueue(url)
            let dead = try f.deadLetter(url: url)
            for arguments in [["show", String(id)], ["show", String(id), "--json"], ["list"], ["list", "--json"],
                              ["dead", "list"], ["dead", "list", "--json"], ["dead", "show", String(dead)],
                              ["dead", "show", String(dead), "--json"]] {
                let result = f.run(arguments)
                #expect(result.status == 0, "\(arguments): \(result)")
                #expect(!result.out.contains("tok-QUERY"), "\(arguments) leaks a query token:\n\(result.out)")
            }
            let text = f.run(["show", String(id)]).out
            #expect(text.contains("user=ann"), "other query values stay: \(text)")
            #expect(text.contains("api_key=\(Redaction.placeholder)"), "\(text)")
            // The stored URL is untouched: the worker sends the real one.
            #expect(try f.db.query("select url from courier.jobs where id = \(id)").rows[0].decode(0, as: String.self) == url)
        }
    }
}
