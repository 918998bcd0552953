import CourierCore
import CourierStore
import Foundation

/// The scheduler service: enqueues the due runs of `courier.schedules`.
///
/// Every worker runs one; none owns the schedules: no leader, no lease. A pass takes
/// one due schedule at a time, each in its own transaction (`SchedulesTable.runNextDue`):
/// it locks the row with `FOR UPDATE SKIP LOCKED` (workers never wait on each other),
/// plans the slots with ``SchedulePlan`` (the missed-run policy), enqueues each run's
/// job with the idempotency key `schedule:<name>:<slot>`, records the run (a slot can
/// be recorded once) and advances `next_run`. A worker killed half-way commits nothing;
/// the row lock goes with its connection, so another worker takes the schedule at its
/// next pass.
public final class Scheduler: WorkerService, @unchecked Sendable {
    /// How the scheduler paces itself, with documented defaults.
    public struct Configuration: Sendable, Equatable {
        /// The longest sleep between passes; a pass also wakes at the earliest next run. Default 1 s.
        public var pollInterval: Duration = .seconds(1)
        /// Slots at most this late are on time and always run; older due slots were missed
        /// (all workers were down) and the schedule's `missed` policy decides. Default 10 s.
        public var lateTolerance: Duration = .seconds(10)
        /// The most schedules one pass handles before the next. Default 100.
        public var schedulesPerPass = 100
        /// Whether the worker runs the scheduler at all. Default true.
        public var enabled = true

        public init() {}
    }

    /// What one pass did.
    public struct PassReport: Sendable, Equatable {
        /// Runs enqueued.
        public var enqueued = 0
        /// Slots not run by policy, or whose deadline had passed.
        public var missed = 0
        /// Schedules whose first next run was computed.
        public var initialized = 0
        /// Schedules that cannot run (bad cron, time zone or template); see `last_error`.
        public var failed = 0
        /// Whether the pass stopped at ``Configuration/schedulesPerPass`` with more due.
        public var more = false
        /// The earliest next run of any runnable schedule after the pass, and the time used.
        public var nextDue: Date?
        public var now: Date = .distantPast
    }

    let name = "courier-scheduler"
    public let configuration: Configuration
    private let session: StoreSession
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let mayRun: @Sendable () -> Bool

    /// - Parameter mayRun: false while the schema lacks a migration the worker needs (no pass then).
    init(configuration: Configuration, session: StoreSession, logger: Logger, metrics: WorkerMetrics,
         mayRun: @escaping @Sendable () -> Bool = { true }) {
        self.configuration = configuration
        self.session = session
        self.logger = logger
        self.metrics = metrics
        self.mayRun = mayRun
    }

    /// One pass over the due schedules. `now` nil uses the database's clock (production);
    /// tests pass a time to replay an outage without waiting. Nil when the database failed.
    @discardableResult
    public func pass(now: Date? = nil) -> PassReport? {
        let result = session.run { store -> PassReport in
            var report = PassReport()
            var handled = 0
            while handled < self.configuration.schedulesPerPass,
                  let pass = try store.schedulesRunNextDue(now: now, lateTolerance: self.configuration.lateTolerance) {
                handled += 1
                self.record(pass, into: &report)
            }
            report.more = handled == self.configuration.schedulesPerPass
            let earliest = try store.schedulesEarliestNextRun(now: now)
            report.nextDue = earliest.next
            report.now = earliest.now
            return report
        }
        guard case .success(let report) = result else { return nil }
        return report
    }

    private func record(_ pass: SchedulesTable.Pass, into report: inout PassReport) {
        if let failure = pass.failure {
            report.failed += 1
            logger.error("schedule cannot run; fix it with jobctl schedule update", [("schedule", pass.schedule), ("error", failure)])
            return
        }
        if pass.initialized { report.initialized += 1 }
        for run in pass.enqueued {
            logger.debug("schedule run enqueued", [
                ("schedule", pass.schedule), ("slot", Timestamp.format(run.slot)), ("job", run.jobID),
                ("queue", pass.queue), ("lag_ms", Int(run.lag * 1000))])
        }
        for slot in pass.missedSample {
            logger.info("schedule slot missed", [
                ("schedule", pass.schedule), ("slot", Timestamp.format(slot)), ("policy", pass.policy.rawValue)])
        }
        if pass.missedCount > pass.missedSample.count {
            // One line per missed slot up to ten, then one line with the count.
            logger.info("schedule slots missed", [
                ("schedule", pass.schedule), ("count", pass.missedCount), ("policy", pass.policy.rawValue),
                ("logged", pass.missedSample.count)])
        }
        if pass.expired > 0 {
            logger.info("schedule runs skipped: their deadline passed", [("schedule", pass.schedule), ("count", pass.expired)])
        }
        report.enqueued += pass.enqueued.count
        report.missed += pass.missedCount + pass.expired
        metrics.recordScheduleRuns(lags: pass.enqueued.map(\.lag), missed: pass.missedCount + pass.expired)
    }

    /// A pass, then sleep until the earliest next run, at most the poll interval.
    func runOnce(now: ContinuousClock.Instant) -> Duration {
        guard mayRun(), let report = pass() else { return configuration.pollInterval }
        if report.more { return .zero }
        guard let next = report.nextDue else { return configuration.pollInterval }
        let until = Duration(timeInterval: next.timeIntervalSince(report.now))
        return min(configuration.pollInterval, max(.milliseconds(5), until))
    }

    func finish() { session.close() }
}
