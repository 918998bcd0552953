import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct NotificationTests {
    @Test func notificationArrivesOnlyAfterCommit() throws {
        try withConnection { listener, database in
            let sender = try database.connect()
            defer { sender.close() }
            try listener.listen("courier_jobs")
            try sender.simpleQuery("BEGIN")
            try sender.notify("courier_jobs", payload: "queue=default")
            _ = try listener.query("select 1")  // a round trip: nothing may be delivered yet
            #expect(try listener.waitForNotifications(timeout: .milliseconds(100)).isEmpty)
            try sender.simpleQuery("COMMIT")
            let received = try listener.waitForNotifications(timeout: .seconds(10))
            #expect(received == [PostgresNotification(channel: "courier_jobs", payload: "queue=default", backendPID: sender.backendPID)])
        }
    }

    @Test func timeoutReturnsEmpty() throws {
        try withConnection { listener, _ in
            try listener.listen("quiet")
            #expect(try listener.waitForNotifications(timeout: .milliseconds(50)).isEmpty)
            #expect(try listener.waitForNotifications(timeout: .zero).isEmpty)
        }
    }

    @Test func oddChannelNamesAreQuotedAndPayloadsKept() throws {
        try withConnection { listener, database in
            let sender = try database.connect()
            defer { sender.close() }
            let channel = "Jobs \"q\"; drop table x; --"
            try listener.listen(channel)
            #expect(listener.listenedChannels == [channel])
            try sender.notify(channel, payload: "ünï 😀 'quoted'")
            try sender.notify(channel, payload: "")
            var received: [PostgresNotification] = []
            while received.count < 2 {
                let batch = try listener.waitForNotifications(timeout: .seconds(10))
                if batch.isEmpty { break }
                received += batch
            }
            #expect(received.map(\.payload) == ["ünï 😀 'quoted'", ""])
            #expect(received.allSatisfy { $0.channel == channel })
            try listener.unlisten(channel)
            try sender.notify(channel, payload: "after unlisten")
            _ = try listener.query("select 1")
            #expect(try listener.waitForNotifications(timeout: .milliseconds(50)).isEmpty)
        }
    }

    @Test func notificationsBufferedDuringQueriesAreReturned() throws {
        try withConnection { listener, database in
            let sender = try database.connect()
            defer { sender.close() }
            try listener.listen("c")
            try sender.notify("c", payload: "1")
            // The sender's commit signalled the listener's backend before notify returned, and a
            // backend sends a pending notification before the ReadyForQuery of its next query at
            // the latest: libpq reads it while busy with this query and buffers it, and the next
            // wait returns it.
            _ = try listener.query("select 1")
            let received = try listener.waitForNotifications(timeout: .seconds(10))
            #expect(received.map(\.payload) == ["1"])
        }
    }

    @Test func listenerReconnectsAndListensAgain() throws {
        try withConnection { listener, database in
            let admin = try adminConnection(database)
            defer { admin.close() }
            let sender = try database.connect()
            defer { sender.close() }
            try listener.listen("wake")
            let oldPID = listener.backendPID
            try terminateBackend(oldPID, using: admin)
            let error = #expect(throws: PostgresError.self) { try listener.waitForNotifications(timeout: .seconds(10)) }
            #expect(error?.isConnectionLoss == true)
            #expect(!listener.isConnected)
            try listener.reconnect()
            #expect(listener.isConnected)
            #expect(listener.backendPID != oldPID)
            let listening = try admin.query("select count(*) from pg_stat_activity where pid = \(listener.backendPID)")
            #expect(try listening.rows[0].decode(0, as: Int.self) == 1)
            try sender.notify("wake", payload: "again")
            let received = try listener.waitForNotifications(timeout: .seconds(10))
            #expect(received.map(\.payload) == ["again"])
        }
    }
}
