import CourierCore
import CourierStore
import Foundation
import Postgres

/// The listening thread: NOTIFY wakes the claim loop and delivers cancellations.
extension Worker {
    func listenLoop() {
        let session = makeSession(database: configuration.listenDatabase ?? configuration.database)
        defer { session.close() }
        var wasConnected = false
        var warned = false
        while !isStopping {
            let result = session.run { connection -> [PostgresNotification]? in
                if connection.listenedChannels.isEmpty {
                    // A new connection: decide whether LISTEN can be trusted on it.
                    let placement = ListenPlacement.decide(listenURLGiven: configuration.listenDatabase != nil,
                                                           connectionIsPooled: connection.isPooled)
                    if placement == .poll { return nil }
                    if placement == .listenWarningPooled, !warned {
                        warned = true
                        logger.warning("--listen-database-url goes through a connection pooler; LISTEN needs a direct connection or session pool mode")
                    }
                    try connection.listen("courier_jobs")
                    try connection.listen("courier_cancel")
                }
                return try connection.waitForNotifications(timeout: .milliseconds(500))
            }
            switch result {
            case .success(nil):
                logger.warning("the database connection goes through a connection pooler, where LISTEN cannot be trusted: polling every \(DurationParser.format(configuration.pollInterval)) and noticing cancellations at heartbeats; give --listen-database-url a direct connection for immediate pickup")
                return
            case .success(let notifications?):
                if !wasConnected {
                    // Notifications sent while we were away are lost: look once.
                    wasConnected = true
                    claimSignal.signal()
                }
                for note in notifications {
                    if note.channel == "courier_jobs" {
                        claimSignal.signal()
                    } else if note.channel == "courier_cancel" {
                        cancelRunning(note.payload.split(separator: ",").compactMap { Int64($0) })
                    }
                }
            case .failure:
                wasConnected = false
            }
        }
    }
}
