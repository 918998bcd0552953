import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct BulkEnqueueTests {
    @Test func copyLoadsOneHundredThousandJobs() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var requests: [EnqueueRequest] = []
            requests.reserveCapacity(100_000)
            for i in 0..<100_000 {
                var r = EnqueueRequest(url: "https://partner\(i % 7).example.com/hook/\(i)")
                r.body = #"{"n":\#(i),"text":"tab\there, newline\nthere, backslash\\"}"#
                r.headers = [("X-Seq", .literal(String(i)))]
                if i % 1000 == 0 { r.idempotencyKey = .none }
                requests.append(r)
            }
            var reported: [Int] = []
            let result = try JobsTable.enqueueMany(requests, on: db, progress: { reported.append($0) })
            #expect(result.inserted == 100_000)
            #expect(reported.last == 100_000)
            #expect(reported.count == 5)
            let row = try db.query("""
                select count(*)::bigint, count(idempotency_key)::bigint, count(distinct idempotency_key)::bigint,
                       count(distinct destination)::bigint
                from courier.jobs
                """).rows[0]
            #expect(try row.decode(0, as: Int.self) == 100_000)
            #expect(try row.decode(1, as: Int.self) == 99_900)
            #expect(try row.decode(2, as: Int.self) == 99_900)
            #expect(try row.decode(3, as: Int.self) == 7)
            let sample = try db.query("""
                select body, headers->>'X-Seq', destination from courier.jobs where url = 'https://partner4.example.com/hook/12345'
                """).rows[0]
            #expect(try sample.decode(0, as: String.self) == #"{"n":12345,"text":"tab\there, newline\nthere, backslash\\"}"#)
            #expect(try sample.decode(1, as: String.self) == "12345")
            #expect(try sample.decode(2, as: String.self) == "https://partner4.example.com:443")
        }
    }

    @Test func bulkIsAllOrNothing() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var good = EnqueueRequest(url: "https://example.com/ok")
            good.queue = "a"
            var bad = EnqueueRequest(url: "https://example.com/bad")
            bad.queue = "no spaces allowed"  // skipped validation on purpose: the CHECK is the backstop
            #expect(throws: PostgresError.self) { try JobsTable.enqueueMany([good, good, bad], on: db) }
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 0)
            // The connection is still usable afterwards.
            #expect(try JobsTable.enqueueMany([good], on: db).inserted == 1)
        }
    }

    @Test func bulkHonoursUniqueKeys() throws {
        try CourierTestDatabase.with { (_, db) throws in
            var a = EnqueueRequest(url: "https://example.com/a")
            a.uniqueKey = "same"
            let result = try JobsTable.enqueueMany([a, a, EnqueueRequest(url: "https://example.com/b")], on: db)
            #expect(result.inserted == 2)
            #expect(result.skippedByUniqueKey == 1)
        }
    }

    @Test func theUniqueKeyPathDerivesDestinationsAndHoldsOpenOnes() throws {
        try CourierTestDatabase.with { (_, db) throws in
            try BreakersTable.force(destination: "https://down.example.com:443", action: .open, on: db)
            var held = EnqueueRequest(url: "https://DOWN.example.com/x")
            held.uniqueKey = "k1"
            var explicit = EnqueueRequest(url: "https://api.example.com/y")
            explicit.uniqueKey = "k2"
            explicit.destination = "partner-api"
            var plain = EnqueueRequest(url: "http://api.example.com:8080/z")
            plain.uniqueKey = "k3"
            #expect(try JobsTable.enqueueMany([held, explicit, plain], on: db).inserted == 3)
            let rows = try db.query("select unique_key, destination, held_since is not null from courier.jobs order by id").rows.map {
                "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: String.self)) \(try $0.decode(2, as: Bool.self))"
            }
            #expect(rows == ["k1 https://down.example.com:443 true", "k2 partner-api false", "k3 http://api.example.com:8080 false"])
            let keys = try db.query("select idempotency_key from courier.jobs").rows.map { try $0.decode(0, as: String.self) }
            #expect(Set(keys).count == 3 && keys.allSatisfy { UUID(uuidString: $0) != nil }, "generated keys: \(keys)")
            // A URL the destination cannot be derived from is refused by name, and nothing is kept.
            var bad = EnqueueRequest(url: "ftp://example.com/")
            bad.uniqueKey = "k4"
            let error = #expect(throws: PostgresError.self) { try JobsTable.enqueueMany([plain, bad], on: db) }
            #expect(error?.message.hasPrefix("url:") == true, "\(String(describing: error))")
            #expect(try db.query("select count(*)::bigint from courier.jobs").rows[0].decode(0, as: Int.self) == 3)
        }
    }
}
