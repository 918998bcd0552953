import CourierStore
import Foundation

/// The scheduler's thread: its own connection, no pass while the schema lacks a migration.
extension Worker {
    func schedulerLoop() {
        guard configuration.scheduler.enabled else { return }
        let session = makeSession()
        defer { session.close() }
        let scheduler = Scheduler(configuration: configuration.scheduler, logger: logger, metrics: metrics)
        scheduler.run(session: session, isStopping: { self.isStopping }, mayRun: { self.missingMigrations.isEmpty },
                      wake: schedulerSignal)
    }
}
