import CourierCore
import CourierStore
import Foundation
import Postgres

/// The listening thread: NOTIFY wakes the claim loop, and makes the worker read which of
/// its jobs were cancelled. Payloads are never trusted (see `NotificationPolicy`).
extension Worker {
    func listenLoop() {
        let session = makeSession(channels: NotificationPolicy.channels)
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
                let looks = NotificationPolicy.looks(forChannels: notifications.map(\.channel))
                if looks.contains(.claim) { claimSignal.signal() }
                if looks.contains(.cancellations), inFlightCount > 0,
                   case .success(let cancelled) = session.run({ try JobsTable.cancelRequested(worker: self.id, on: $0) }) {
                    cancelRunning(cancelled)
                }
            case .failure:
                wasConnected = false
            }
        }
    }
}
