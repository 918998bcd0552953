import CourierControl
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// `jobctl enqueue --signing-secret`, `jobctl destinations`, `jobctl destination set|reset`,
/// and what `show` says about signing.
@Suite struct SigningCommandTests {
    @Test func enqueueStoresTheNameFromTheFlagAndFromNDJSON() throws {
        try ControlFixture.with { fixture throws in
            let one = fixture.run(["enqueue", "--url", "https://partner.example.com/h", "--signing-secret", "PARTNER_HOOKS", "--json"])
            #expect(one.status == 0, "\(one)")
            let id = try #require(try one.object()["id"] as? Int)
            #expect(try fixture.db.query("select signing_secret from courier.jobs where id = \(id)").rows[0].decode(0, as: String?.self) == "PARTNER_HOOKS")
            let show = fixture.run(["show", String(id)])
            #expect(show.out.contains("signed with:     secret PARTNER_HOOKS (the job's own)"), "\(show)")
            let json = try fixture.run(["show", String(id), "--json"]).object()
            #expect(json["signing_secret"] as? String == "PARTNER_HOOKS")
            #expect(json["signing_secret_from"] as? String == "job")

            let lines = #"{"url": "https://partner.example.com/a", "signing_secret": "BULK_HOOKS"}"# + "\n" + #"{"url": "https://partner.example.com/b"}"#
            let bulk = fixture.run(["enqueue", "--ndjson", "-"], stdin: Data(lines.utf8))
            #expect(bulk.status == 0, "\(bulk)")
            let names = try fixture.db.query("select signing_secret from courier.jobs where url like '%/a' or url like '%/b' order by id")
                .rows.map { try $0.decode(0, as: String?.self) }
            #expect(names == ["BULK_HOOKS", nil])
        }
    }

    @Test func aBadNameIsExitTwoNamingTheFlagOrLineAndNothingIsEnqueued() throws {
        try ControlFixture.with { fixture throws in
            let flag = fixture.run(["enqueue", "--url", "https://e.com/h", "--signing-secret", "not a name"])
            #expect(flag.status == 2, "\(flag)")
            #expect(flag.err.contains("--signing-secret"), "\(flag.err)")
            let line = fixture.run(["enqueue", "--ndjson", "-"], stdin: Data(#"{"url": "https://e.com", "signing_secret": "x/y"}"#.utf8))
            #expect(line.status == 2 && line.err.contains("line 1: signing_secret"), "\(line)")
            let destination = fixture.run(["destination", "set", "https://e.com", "--signing-secret", "bad name"])
            #expect(destination.status == 2 && destination.err.contains("--signing-secret"), "\(destination)")
            let missing = fixture.run(["destination", "set", "https://e.com"])
            #expect(missing.status == 2, "\(missing)")
            #expect(try fixture.jobCount == 0)
            #expect(try fixture.int("select count(*)::bigint from courier.destinations") == 0)
        }
    }

    @Test func destinationSetListsResetsAndTheDefaultReachesShow() throws {
        try ControlFixture.with { fixture throws in
            let empty = fixture.run(["destinations"])
            #expect(empty.status == 0 && empty.out.contains("no destination policies"), "\(empty)")
            let id = try fixture.enqueue("https://partner.example.com/hooks")

            let set = fixture.run(["destination", "set", "https://Partner.Example.com/anything", "--signing-secret", "PARTNER_HOOKS"])
            #expect(set.status == 0, "\(set)")
            #expect(set.out.contains("https://partner.example.com:443") && set.out.contains("PARTNER_HOOKS"), "\(set.out)")
            let listed = try fixture.run(["destinations", "--json"]).array()
            #expect(listed.map { $0["destination"] as? String } == ["https://partner.example.com:443"])
            #expect(listed.first?["signing_secret"] as? String == "PARTNER_HOOKS")

            let show = fixture.run(["show", String(id)])
            #expect(show.out.contains("signed with:     secret PARTNER_HOOKS (the destination's default)"), "\(show)")
            #expect(try fixture.run(["show", String(id), "--json"]).object()["signing_secret_from"] as? String == "destination")

            let reset = fixture.run(["destination", "reset", "https://partner.example.com:443", "--json"])
            #expect(reset.status == 0, "\(reset)")
            #expect(!fixture.run(["show", String(id)]).out.contains("signed with"))
            let again = fixture.run(["destination", "reset", "https://partner.example.com:443"])
            #expect(again.status == 3 && again.err.contains("has no policy"), "\(again)")
        }
    }
}
