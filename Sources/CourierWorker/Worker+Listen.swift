import CourierCore
import CourierStore
import Foundation
import Postgres

/// The listening thread: NOTIFY wakes the claim loop and delivers cancellations.
extension Worker {
    func listenLoop() {
        let session = makeSession(channels: ["courier_jobs", "courier_cancel"])
        defer { session.close() }
        var wasConnected = false
        while !isStopping {
            let result = session.run { connection in
                try connection.waitForNotifications(timeout: .milliseconds(500))
            }
            switch result {
            case .success(let notifications):
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
