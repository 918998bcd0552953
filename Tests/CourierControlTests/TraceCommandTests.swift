import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 44 through jobctl: `enqueue --traceparent/--tracestate` (and NDJSON), `show`, and
/// `destination set --propagate-trace/--no-propagate-trace`; bad values exit 2 naming the flag.
@Suite struct TraceCommandTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func enqueueKeepsTheContextAndShowPrintsIt() throws {
        try ControlFixture.with { fixture throws in
            let enqueued = fixture.run(["enqueue", "--url", "https://example.com/a", "--traceparent", Self.traceparent,
                                        "--tracestate", "app=checkout"])
            #expect(enqueued.status == 0, "\(enqueued)")
            let id = enqueued.out.trimmingCharacters(in: .whitespacesAndNewlines)
            let shown = fixture.run(["show", id])
            #expect(shown.out.contains("traceparent:     \(Self.traceparent) (tracestate app=checkout)"), "\(shown.out)")
            let json = try fixture.run(["show", id, "--json"]).object()
            #expect(json["traceparent"] as? String == Self.traceparent && json["tracestate"] as? String == "app=checkout")

            let bad = fixture.run(["enqueue", "--url", "https://example.com/a", "--traceparent", "00-nope"])
            #expect(bad.status == 2 && bad.err.contains("--traceparent"), "\(bad)")
            let lonely = fixture.run(["enqueue", "--url", "https://example.com/a", "--tracestate", "a=1"])
            #expect(lonely.status == 2 && lonely.err.contains("--tracestate"), "\(lonely)")

            let ndjson = fixture.run(["enqueue", "--ndjson", "-"],
                                     stdin: Data(#"{"url": "https://example.com/n", "traceparent": "\#(Self.traceparent)"}"#.utf8 + [0x0A]))
            #expect(ndjson.status == 0, "\(ndjson)")
            let count = try fixture.db.query("select count(*)::int from courier.jobs where traceparent = \(Self.traceparent)")
                .rows[0].decode(0, as: Int.self)
            #expect(count == 2)
        }
    }

    @Test func deadShowPrintsTheKeptContext() throws {
        try ControlFixture.with { fixture throws in
            let worker = UUID()
            var request = EnqueueRequest(url: "https://example.com/d")
            request.traceparent = Self.traceparent
            let id = try JobsTable.enqueue(request, on: fixture.db)
            try fixture.db.query("update courier.jobs set state = 'running', attempt = 1, lease_seq = 1, leased_by = \(worker), lease_expires_at = now() + interval '1 minute' where id = \(id)")
            try JobsTable.deadLetter([.init(id: id, attempt: 1, lease: 1, reason: .permanent, errorJSON: #"{"class":"client"}"#,
                                            lastClass: .client, lastStatus: 404)], worker: worker, on: fixture.db)
            let letter = try fixture.db.query("select id from courier.dead_letters where job_id = \(id)").rows[0].decode(0, as: Int64.self)
            let shown = fixture.run(["dead", "show", String(letter)])
            #expect(shown.status == 0 && shown.out.contains("traceparent:     \(Self.traceparent)"), "\(shown)")
            #expect(try fixture.run(["dead", "show", String(letter), "--json"]).object()["traceparent"] as? String == Self.traceparent)
        }
    }

    @Test func destinationsOptInAndOut() throws {
        try ControlFixture.with { fixture throws in
            let on = fixture.run(["destination", "set", "https://partner.example", "--propagate-trace", "--json"])
            #expect(on.status == 0, "\(on)")
            #expect(try on.object()["propagate_trace"] as? Bool == true)
            #expect(try fixture.run(["destinations", "--json"]).array().first?["propagate_trace"] as? Bool == true)
            let text = fixture.run(["destination", "set", "https://partner.example", "--max-in-flight", "2"])
            #expect(text.out.contains("PROPAGATE_TRACE") && text.out.contains("yes"), "\(text.out)")
            let off = fixture.run(["destination", "set", "https://partner.example", "--no-propagate-trace", "--json"])
            #expect(try off.object()["propagate_trace"] as? Bool == false)
            let both = fixture.run(["destination", "set", "https://partner.example", "--propagate-trace", "--no-propagate-trace"])
            #expect(both.status == 2, "\(both)")
        }
    }
}
