import CourierCore
import CourierStore
import Foundation
import Postgres

/// The scheduler service: enqueues the due runs of `courier.schedules`.
///
/// Every worker runs one; none owns the schedules. A pass takes one due schedule at a
/// time, in its own transaction: it locks the row (`FOR UPDATE SKIP LOCKED`, so workers
/// never wait on each other), plans the slots with ``SchedulePlan`` (the missed-run
/// policy), enqueues each run's job with the idempotency key `schedule:<name>:<slot>`,
/// records the run in `courier.schedule_runs` (whose primary key refuses a slot twice) and
/// advances `next_run`. A worker killed half-way commits nothing; the row lock goes with
/// its connection, so another worker takes the schedule at its next pass.
public final class Scheduler: @unchecked Sendable {
    /// How the scheduler paces itself, with documented defaults.
    public struct Configuration: Sendable, Equatable {
        /// The longest sleep between passes; a pass also wakes at the earliest next run. Default 1 s.
        public var pollInterval: Duration = .seconds(1)
        /// Slots at most this late are on time and always run; older due slots were missed
        /// (all workers were down) and the schedule's `missed` policy decides. Default 10 s.
        public var lateTolerance: Duration = .seconds(10)
        /// The most schedules one pass handles before sleeping. Default 100.
        public var schedulesPerPass = 100
        /// Whether the worker runs the scheduler at all. Default true.
        public var enabled = true

        public init() {}
    }

    /// What one pass did.
    public struct PassReport: Sendable, Equatable {
        /// Runs enqueued.
        public var enqueued = 0
        /// Slots not run by policy (or whose deadline had passed).
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

    public let configuration: Configuration
    let logger: Logger
    let metrics: WorkerMetrics

    public init(configuration: Configuration = Configuration(), logger: Logger, metrics: WorkerMetrics = WorkerMetrics()) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
    }

    /// One pass over the due schedules. `now` nil uses the database's clock (production);
    /// tests pass a time to replay outages without waiting.
    @discardableResult
    public func runOnce(now: Date? = nil, on connection: PostgresConnection) throws -> PassReport {
        var report = PassReport()
        var handled = 0
        while handled < configuration.schedulesPerPass {
            guard try runOne(now: now, on: connection, into: &report) else { break }
            handled += 1
        }
        report.more = handled == configuration.schedulesPerPass
        let earliest = try SchedulesTable.earliestNextRun(now: now, on: connection)
        report.nextDue = earliest.next
        report.now = earliest.now
        return report
    }

    /// Handles one due schedule; false when none is due.
    private func runOne(now: Date?, on connection: PostgresConnection, into report: inout PassReport) throws -> Bool {
        var failedName: String?
        var failure = ""
        do {
            let outcome = try connection.withTransaction { tx -> Bool in
                guard let (schedule, current) = try SchedulesTable.claimDue(now: now, on: tx) else { return false }
                failedName = schedule.name
                let rule: ScheduleRule
                let template: ScheduleTemplate
                do {
                    rule = try schedule.rule()
                    template = try ScheduleTemplate(json: schedule.template)
                } catch let error as ValidationError {
                    try SchedulesTable.fail(schedule.name, error: error.description, on: tx)
                    logger.error("schedule cannot run; fix it with jobctl schedule update", [
                        ("schedule", schedule.name), ("error", error.description)])
                    report.failed += 1
                    return true
                }
                guard let stored = schedule.nextRun else {
                    try SchedulesTable.advance(schedule.name, nextRun: rule.next(after: current), on: tx)
                    report.initialized += 1
                    return true
                }
                let plan = SchedulePlan.make(rule: rule, nextRun: stored, now: current, policy: schedule.missed,
                                             tolerance: configuration.lateTolerance)
                var lags: [Double] = []
                var expired = 0
                for slot in plan.runs {
                    if let within = template.withinMilliseconds,
                       slot.addingTimeInterval(Double(within) / 1000) <= max(current, slot) {
                        expired += 1   // its deadline passed before it could be enqueued
                        continue
                    }
                    let job = try template.enqueue(schedule: schedule.name, slot: slot, on: tx)
                    try SchedulesTable.recordRun(schedule: schedule.name, slot: slot, jobID: job, on: tx)
                    let lag = max(0, current.timeIntervalSince(slot))
                    lags.append(lag)
                    logger.debug("schedule run enqueued", [
                        ("schedule", schedule.name), ("slot", Timestamp.format(slot)), ("job", job),
                        ("queue", template.queue), ("lag_ms", Int(lag * 1000))])
                }
                try SchedulesTable.advance(schedule.name, nextRun: plan.nextRun, on: tx)
                for slot in plan.missedSample {
                    logger.info("schedule slot missed", [
                        ("schedule", schedule.name), ("slot", Timestamp.format(slot)), ("policy", schedule.missed.rawValue)])
                }
                if plan.missedCount > plan.missedSample.count {
                    logger.info("schedule slots missed", [
                        ("schedule", schedule.name), ("count", plan.missedCount), ("policy", schedule.missed.rawValue),
                        ("logged", plan.missedSample.count)])
                }
                if expired > 0 {
                    logger.info("schedule runs skipped: their deadline passed", [("schedule", schedule.name), ("count", expired)])
                }
                report.enqueued += lags.count
                report.missed += plan.missedCount + expired
                metrics.recordScheduleRuns(lags: lags, missed: plan.missedCount + expired)
                return true
            }
            return outcome
        } catch let error as PostgresError where error.sqlState.map({ $0.hasPrefix("22") || $0.hasPrefix("23") }) ?? false {
            // The database refused the run's job (a template added through SQL with a bad
            // value): nothing was enqueued; mark the schedule so it is not retried every pass.
            guard let name = failedName else { throw error }
            failure = "the job was refused: \(error.message)"
            try SchedulesTable.fail(name, error: failure, on: connection)
            logger.error("schedule cannot run; fix it with jobctl schedule update", [("schedule", name), ("error", failure)])
            report.failed += 1
            return true
        }
    }

    /// The service loop: a pass, then sleep until the earliest next run (at most the poll
    /// interval) or until `wake` is signalled. Runs no pass while `mayRun` is false.
    func run(session: DatabaseSession, isStopping: () -> Bool, mayRun: () -> Bool, wake: ThreadSignal) {
        while !isStopping() {
            var sleep = configuration.pollInterval
            if mayRun(), case .success(let report) = session.run({ try self.runOnce(on: $0) }) {
                if report.more {
                    sleep = .zero
                } else if let next = report.nextDue {
                    let until = Duration(timeInterval: next.timeIntervalSince(report.now))
                    sleep = min(sleep, max(.milliseconds(5), until))
                }
            }
            if sleep > .zero { wake.wait(timeout: sleep) }
        }
    }
}
