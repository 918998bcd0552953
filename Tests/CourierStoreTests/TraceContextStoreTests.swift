import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 44: a job's trace context through every door (courier.enqueue, the transaction-local
/// `courier.traceparent` for plain INSERT and COPY, the Swift API and its bulk paths, NDJSON),
/// one set of W3C rules in SQL and in Swift, and the context kept by retries, dead letters
/// and replays; `propagate_trace` on destinations.
@Suite struct TraceContextStoreTests {
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    func context(_ id: Int64, on db: PostgresConnection) throws -> (String?, String?) {
        let row = try db.query("select traceparent, tracestate from courier.jobs where id = \(id)").rows[0]
        return (try row.decode(0, as: String?.self), try row.decode(1, as: String?.self))
    }

    func failure(_ body: () throws -> Void) -> PostgresError? {
        do { try body() } catch let error as PostgresError { return error } catch { return nil }
        return nil
    }

    /// One list of values, judged alike by `courier.is_traceparent`/`is_tracestate` and by Swift.
    @Test func sqlAndSwiftAgreeOnEveryValue() throws {
        try CourierTestDatabase.with { (_, db) throws in
            for (text, _) in Self.traceparentSamples {
                let sql = try db.query("select coalesce(courier.is_traceparent(\(text)), false)").rows[0].decode(0, as: Bool.self)
                #expect(sql == (TraceContext(traceparent: text) != nil), "\(text)")
            }
            for text in Self.tracestateSamples {
                let sql = try db.query("select coalesce(courier.is_tracestate(\(text)), false)").rows[0].decode(0, as: Bool.self)
                #expect(sql == TraceContext.isValidTracestate(text), "\(text.prefix(40))")
            }
        }
    }

    static let traceparentSamples: [(String, Bool)] = [
        (traceparent, true), ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false), ("", false), ("junk", false),
    ]
    static let tracestateSamples = [
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "", "a=1,,b=2", " a=1 ,\tb=2 ", "t@sys=x y", "1a@b=c", "A=1", "a=1=2",
        "a=", "1a=b", "k=v" + String(repeating: ",k=v", count: 31), "k=v" + String(repeating: ",k=v", count: 32),
        "a=" + String(repeating: "x", count: 600),
    ]

    @Test func everyDoorTakesTheContext() throws {
        try CourierTestDatabase.with { (_, db) throws in
            // courier.enqueue's parameters.
            let bySQL = try db.query("""
                select courier.enqueue(url => 'https://example.com/a', traceparent => \(Self.traceparent), tracestate => 'app=1')
                """).rows[0].decode(0, as: Int64.self)
            #expect(try context(bySQL, on: db) == (Self.traceparent, "app=1"))
            // The transaction-local setting, for courier.enqueue and plain INSERT alike; a row's own value wins.
            let (bySetting, byInsert, own) = try db.withTransaction { tx -> (Int64, Int64, Int64) in
                try tx.query("select set_config('courier.traceparent', \(Self.traceparent), true)")
                try tx.query("select set_config('courier.tracestate', 'set=local', true)")
                let a = try tx.query("select courier.enqueue(url => 'https://example.com/b')").rows[0].decode(0, as: Int64.self)
                let b = try tx.query("""
                    insert into courier.jobs (destination, url) values ('https://example.com:443', 'https://example.com/c') returning id
                    """).rows[0].decode(0, as: Int64.self)
                let c = try tx.query("select courier.enqueue(url => 'https://example.com/d', traceparent => \(Self.other))")
                    .rows[0].decode(0, as: Int64.self)
                return (a, b, c)
            }
            #expect(try context(bySetting, on: db) == (Self.traceparent, "set=local"))
            #expect(try context(byInsert, on: db) == (Self.traceparent, "set=local"))
            #expect(try context(own, on: db).0 == Self.other)
            // The setting ends with its transaction.
            let after = try db.query("select courier.enqueue(url => 'https://example.com/e')").rows[0].decode(0, as: Int64.self)
            #expect(try context(after, on: db) == (nil, nil))

            // The Swift API, one job and the bulk paths (direct COPY, staged with unique keys).
            var request = EnqueueRequest(url: "https://example.com/swift")
            request.traceparent = Self.traceparent
            request.tracestate = "swift=1"
            try request.validate()
            let bySwift = try JobsTable.enqueue(request, on: db)
            #expect(try context(bySwift, on: db) == (Self.traceparent, "swift=1"))
            var unique = request
            unique.uniqueKey = "u-1"
            _ = try JobsTable.enqueueMany([request, request], on: db)
            _ = try JobsTable.enqueueMany([unique], on: db)
            let bulk = try db.query("select count(*)::int from courier.jobs where tracestate = 'swift=1'").rows[0].decode(0, as: Int.self)
            #expect(bulk == 4)
            // The transaction-local setting covers COPY too.
            try db.withTransaction { tx in
                try tx.query("select set_config('courier.traceparent', \(Self.other), true)")
                _ = try tx.copyFrom("copy courier.jobs (destination, url) from stdin",
                                    rows: [["https://example.com:443", "https://example.com/copied"]])
            }
            let copied = try db.query("select traceparent from courier.jobs where url = 'https://example.com/copied'").rows[0]
            #expect(try copied.decode(0, as: String?.self) == Self.other)

            // NDJSON.
            let line = try EnqueueRequest(jsonLine: #"{"url": "https://example.com/n", "traceparent": "\#(Self.traceparent)", "tracestate": "n=1"}"#)
            #expect(line.traceparent == Self.traceparent && line.tracestate == "n=1")
        }
    }

    @Test func badValuesAreRefusedNamingTheField() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let bad = failure { try db.query("select courier.enqueue(url => 'https://example.com/a', traceparent => 'nope')") }
            #expect(bad?.sqlState == "22023" && bad?.columnName == "traceparent")
            let lonely = failure { try db.query("select courier.enqueue(url => 'https://example.com/a', tracestate => 'a=1')") }
            #expect(lonely?.sqlState == "22023" && lonely?.columnName == "tracestate")
            let state = failure {
                try db.query("select courier.enqueue(url => 'https://example.com/a', traceparent => \(Self.traceparent), tracestate => 'A=1')")
            }
            #expect(state?.sqlState == "22023" && state?.columnName == "tracestate")
            let setting = failure {
                try db.withTransaction { tx in
                    try tx.query("select set_config('courier.traceparent', 'junk', true)")
                    try tx.query("select courier.enqueue(url => 'https://example.com/a')")
                }
            }
            #expect(setting?.sqlState == "22023" && setting?.columnName == "traceparent")
            let insert = failure {
                try db.query("insert into courier.jobs (destination, url, traceparent) values ('https://example.com:443', 'https://example.com/x', 'junk')")
            }
            #expect(insert?.sqlState == "23514", "the domain's check backs every door")

            var request = EnqueueRequest(url: "https://example.com/a")
            request.traceparent = "junk"
            #expect(throws: ValidationError(field: "traceparent", message: TraceContext.traceparentRule)) { try request.validate() }
            request.traceparent = nil
            request.tracestate = "a=1"
            #expect(throws: ValidationError(field: "tracestate", message: "needs a traceparent")) { try request.validate() }
            #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: #"{"url": "https://example.com/a", "traceparent": 5}"#) }
        }
    }

    @Test func retriesAndReplaysKeepTheContext() throws {
        try CourierTestDatabase.with { (_, db) throws in
            let worker = UUID()
            let id = try db.query("""
                select courier.enqueue(url => 'https://example.com/r', traceparent => \(Self.traceparent), tracestate => 'k=v', max_attempts => 2)
                """).rows[0].decode(0, as: Int64.self)
            try db.query("update courier.jobs set state = 'running', attempt = 1, lease_seq = 1, leased_by = \(worker), lease_expires_at = now() + interval '1 minute' where id = \(id)")
            try JobsTable.retry([.init(id: id, attempt: 1, lease: 1, delayMilliseconds: 0, errorJSON: #"{"class":"server","traceparent":"\#(Self.other)"}"#)],
                                worker: worker, on: db)
            #expect(try context(id, on: db) == (Self.traceparent, "k=v"))
            // The claim reads the previous attempt's span context from the error entry.
            let claimed = try #require(try JobsTable.claim(queue: "default", limit: 1, worker: worker, leaseMilliseconds: 60_000, on: db).first)
            #expect(claimed.traceparent == Self.traceparent && claimed.tracestate == "k=v")
            #expect(claimed.previousAttemptTraceparent == Self.other)
            try JobsTable.deadLetter([.init(id: id, attempt: claimed.attempt, lease: claimed.lease, reason: .exhausted,
                                            errorJSON: #"{"class":"server"}"#, lastClass: .server, lastStatus: 500)],
                                     worker: worker, on: db)
            let kept = try db.query("select traceparent, tracestate from courier.dead_letters where job_id = \(id)").rows[0]
            #expect(try kept.decode(0, as: String?.self) == Self.traceparent && kept.decode(1, as: String?.self) == "k=v")
            let replayed = try db.query("select new_job_id from courier.replay_dead_letters(ids => array(select id from courier.dead_letters where job_id = \(id)))")
                .rows[0].decode(0, as: Int64.self)
            #expect(try context(replayed, on: db) == (Self.traceparent, "k=v"))
            #expect(try JobsTable.get(id: replayed, on: db)?.traceparent == Self.traceparent)
        }
    }

    @Test func destinationsOptInToPropagation() throws {
        try CourierTestDatabase.with { (_, db) throws in
            #expect(try DestinationsTable.propagatingTrace(on: db).isEmpty)
            let set = try DestinationsTable.merge(.init(destination: "https://Partner.example"), propagateTrace: true, on: db)
            #expect(set.propagateTrace && set.destination == "https://partner.example:443")
            // Other changes keep it; --no-propagate-trace clears it.
            let capped = try DestinationsTable.merge(.init(destination: "https://partner.example", maxInFlight: 3), on: db)
            #expect(capped.propagateTrace)
            #expect(try DestinationsTable.propagatingTrace(on: db) == ["https://partner.example:443"])
            let off = try DestinationsTable.merge(.init(destination: "https://partner.example"), propagateTrace: false, on: db)
            #expect(!off.propagateTrace)
            #expect(try DestinationsTable.propagatingTrace(on: db).isEmpty)
        }
    }
}
