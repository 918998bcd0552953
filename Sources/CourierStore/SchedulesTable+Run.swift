import CourierCore
import Foundation
import Postgres

extension SchedulesTable {
    /// One run enqueued by a scheduler pass.
    public struct EnqueuedRun: Sendable, Equatable {
        public var slot: Date
        public var jobID: Int64
        /// Seconds from the slot to the enqueue.
        public var lag: Double
    }

    /// What handling one due schedule did, for the scheduler's log and metrics.
    public struct Pass: Sendable, Equatable {
        public var schedule: String
        public var policy: MissedRunPolicy = .default
        /// The queue of the runs' jobs.
        public var queue = ""
        public var enqueued: [EnqueuedRun] = []
        /// Due slots not run by the missed-run policy (or beyond the bound of `all`).
        public var missedCount = 0
        /// The latest missed slots (at most 10), for the log.
        public var missedSample: [Date] = []
        /// Runs not enqueued because their deadline (`within_ms` after the slot) had passed.
        public var expired = 0
        /// True when the pass only computed the first next run.
        public var initialized = false
        /// Why the schedule cannot run (recorded as its `last_error`), when it cannot.
        public var failure: String?
    }

    /// Handles one due schedule in one transaction: locks it (`FOR UPDATE SKIP LOCKED`),
    /// plans its slots (``SchedulePlan``), enqueues each run's job with the key
    /// `schedule:<name>:<slot>`, records the runs (the primary key refuses a slot twice)
    /// and advances `next_run`. Returns nil when nothing is due.
    ///
    /// `now` nil uses the database's clock. A schedule whose rule or template cannot be
    /// read, or whose job the database refuses, gets `last_error` and is skipped until changed.
    public static func runNextDue(now: Date?, lateTolerance: Duration, on connection: PostgresConnection) throws -> Pass? {
        var claimed: String?
        do {
            return try connection.withTransaction { tx -> Pass? in
                guard let (schedule, current) = try claimDue(now: now, on: tx) else { return nil }
                claimed = schedule.name
                var pass = Pass(schedule: schedule.name, policy: schedule.missed)
                let rule: ScheduleRule
                let template: ScheduleTemplate
                do throws(ValidationError) {
                    rule = try schedule.rule()
                    template = try ScheduleTemplate(json: schedule.template)
                } catch {
                    pass.failure = error.description
                    try fail(schedule.name, error: error.description, on: tx)
                    return pass
                }
                pass.queue = template.queue
                guard let stored = schedule.nextRun else {
                    try advance(schedule.name, nextRun: rule.next(after: current), on: tx)
                    pass.initialized = true
                    return pass
                }
                let plan = SchedulePlan.make(rule: rule, nextRun: stored, now: current, policy: schedule.missed,
                                             tolerance: lateTolerance)
                for slot in plan.runs {
                    if let within = template.withinMilliseconds,
                       slot.addingTimeInterval(Double(within) / 1000) <= max(current, slot) {
                        pass.expired += 1
                        continue
                    }
                    let job = try template.enqueue(schedule: schedule.name, slot: slot, on: tx)
                    try recordRun(schedule: schedule.name, slot: slot, jobID: job, on: tx)
                    pass.enqueued.append(EnqueuedRun(slot: slot, jobID: job, lag: max(0, current.timeIntervalSince(slot))))
                }
                try advance(schedule.name, nextRun: plan.nextRun, on: tx)
                pass.missedCount = plan.missedCount
                pass.missedSample = plan.missedSample
                return pass
            }
        } catch let error as PostgresError where error.sqlState.map({ $0.hasPrefix("22") || $0.hasPrefix("23") }) ?? false {
            // The database refused the run's job (a template added through SQL with a bad
            // value): nothing was enqueued; mark the schedule so it is not tried every pass.
            guard let name = claimed else { throw error }
            let failure = "the job was refused: \(error.message)"
            try fail(name, error: failure, on: connection)
            return Pass(schedule: name, failure: failure)
        }
    }
}
