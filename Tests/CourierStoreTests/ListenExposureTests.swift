import CourierCore
import CourierStore
import CourierTestSupport
import Foundation
import Postgres
import Testing

/// Issue 43 item 9: PostgreSQL needs no privilege for LISTEN, so any role that can connect
/// hears Courier's channels. docs/security.md states what they carry; this test performs the
/// eavesdropping and holds the payloads to that statement: queue names and destination keys
/// with their breaker transitions, never a URL path, header or body (the payloads are
/// compared whole).
@Suite struct ListenExposureTests {
    @Test func aListenerWithoutGrantsHearsQueueAndDestinationNamesOnly() throws {
        try CourierTestDatabase.with { (database: TestDatabase, admin: PostgresConnection) throws in
            let login = try RoleGrantTests.Login.create(memberOf: "courier_enqueue", database: database)
            defer { login.drop() }
            let eavesdropper = try login.connect()
            defer { eavesdropper.close() }
            for channel in ["courier_jobs", "courier_traffic", "courier_breakers", "courier_cancel"] {
                try eavesdropper.listen(channel)
            }
            var request = EnqueueRequest(url: "https://partner.example.com/tenant-42/orders?token=abc")
            request.queue = "billing"
            request.body = "{\"card\":\"4111\"}"
            request.headers = [("X-Customer", .literal("tenant-42"))]
            _ = try JobsTable.enqueue(request, on: admin)
            _ = try admin.query("select courier.destination_pause('https://partner.example.com', true)")

            var heard: [PostgresNotification] = []
            let deadline = ContinuousClock.now + .seconds(10)
            while heard.count < 2, ContinuousClock.now < deadline {
                heard += try eavesdropper.waitForNotifications(timeout: .milliseconds(200))
            }
            #expect(heard.map(\.channel).sorted() == ["courier_jobs", "courier_traffic"], "\(heard)")
            for note in heard {
                switch note.channel {
                case "courier_jobs": #expect(note.payload == "billing")
                case "courier_traffic": #expect(note.payload == "https://partner.example.com:443")
                default: Issue.record("unexpected \(note)")
                }
                for secret in ["tenant-42", "orders", "token", "4111"] {
                    #expect(!note.payload.contains(secret), "\(note.channel) carries \(secret)")
                }
            }
        }
    }
}
