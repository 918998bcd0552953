@testable import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct BulkPathTests {
    @Test(arguments: [
        (#"{"url":"x","body":{"b":[1,{"c":"}]"}],"a":1},"queue":"q"}"#, #"{"b":[1,{"c":"}]"}],"a":1}"#),
        (#"{ "body" : [ 1 , 2 ] , "url" : "x" }"#, "[ 1 , 2 ]"),
        (#"{"url":"x","destination":"\"body\": 5","body":true}"#, "true"),
        (#"{"url":"x","body":"text \" with quote"}"#, #"text " with quote"#),
        (#"{"url":"x","body":-1.5e3}"#, "-1.5e3"),
        (#"{"url":"x","body":{"emoji":"\ud83d\ude00 ü"}}"#, #"{"emoji":"\ud83d\ude00 ü"}"#),
    ])
    func aJSONBodyIsKeptExactlyAsWritten(line: String, expected: String) throws {
        #expect(try EnqueueRequest(jsonLine: line).body == expected)
    }

    @Test func destinationsDerivedInSwiftMatchTheSQLFunction() throws {
        let urls = [
            "https://Example.com/a", "http://example.com", "HTTPS://api.example.com:8443/x?y=1#z", "http://10.0.0.1:80/",
            "http://[::1]:8080/p", "https://xn--bcher-kva.example/", "http://host.example:65535", "https://h.example?q=1",
        ]
        try CourierTestDatabase.with { (_, db) throws in
            for url in urls {
                let swift = try EnqueueRequest(url: url).resolvedDestination()
                let sql = try db.query("select courier.destination_of(\(url))").rows[0].decode(0, as: String?.self)
                #expect(swift == sql, "\(url)")
            }
        }
    }

    @Test func theDirectPathStampsTheTransactionTimeAndNotifiesEachQueue() throws {
        try CourierTestDatabase.with { (database, db) throws in
            let listener = try PostgresConnection.connect(PostgresConfiguration(connectionString: database.url))
            defer { listener.close() }
            try listener.listen("courier_jobs")
            var a = EnqueueRequest(url: "https://example.com/a")
            a.queue = "alpha"
            var b = EnqueueRequest(url: "https://example.com/b")
            b.queue = "beta"
            b.runAt = Date(timeIntervalSince1970: 2_000_000_000)
            #expect(try JobsTable.enqueueMany([a, b, a], on: db).inserted == 3)
            let rows = try db.query("""
                select queue, run_at = created_at, run_at from courier.jobs order by id
                """).rows
            #expect(try rows[0].decode(1, as: Bool.self), "no run_at: the transaction's now(), like courier.enqueue")
            #expect(try rows[1].decode(2, as: Date.self) == Date(timeIntervalSince1970: 2_000_000_000))
            var payloads: [String] = []
            for _ in 0..<20 where payloads.count < 2 {
                payloads += try listener.waitForNotifications(timeout: .milliseconds(250)).map(\.payload)
            }
            #expect(payloads.sorted() == ["alpha", "beta"])
        }
    }
}
