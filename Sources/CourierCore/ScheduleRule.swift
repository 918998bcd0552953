import Foundation

/// When a schedule's runs fall due: a cron expression read in a time zone, or a fixed
/// interval. The one source of schedule timing: the worker, jobctl and the tests ask it.
///
/// Slot times are exact instants, so a slot names a run (its idempotency key is built
/// from it): cron slots are whole minutes (or a daylight-saving transition, see below),
/// interval slots whole multiples of the interval since 1970-01-01T00:00:00Z, so
/// `every 1h` runs on the hour and every worker computes the same slots.
public enum ScheduleRule: Sendable, Equatable {
    /// A cron expression evaluated in wall-clock time of `timeZone`.
    case cron(CronExpression, timeZone: TimeZone)
    /// Every `seconds` seconds (at least 1).
    case every(seconds: Int64)

    /// The default time zone name.
    public static let defaultTimeZone = "UTC"

    /// Reads a time zone by IANA name (`Europe/Berlin`) from the system's tzdata; errors name `field`.
    public static func timeZone(named name: String, field: String = "timezone") throws(ValidationError) -> TimeZone {
        guard !name.isEmpty, name.count <= 64, let zone = TimeZone(identifier: name) else {
            throw ValidationError(field: field, message: "unknown time zone \(Quoting.quote(name)); use an IANA name such as UTC, Europe/Berlin or America/New_York")
        }
        return zone
    }

    /// Reads an interval with the project's duration grammar; it must be whole seconds, at least 1s.
    public static func interval(_ text: String, field: String = "every") throws(ValidationError) -> Int64 {
        let duration = try DurationParser.parse(text, field: field)
        let nanos = duration.nanosecondsClamped
        guard nanos >= 1_000_000_000 else { throw ValidationError(field: field, message: "must be at least 1s") }
        guard nanos % 1_000_000_000 == 0 else {
            throw ValidationError(field: field, message: "must be a whole number of seconds, got \(Quoting.quote(text))")
        }
        return nanos / 1_000_000_000
    }

    /// The first slot strictly after `instant`, or nil when there is none within about 30 years.
    ///
    /// Cron expressions match local wall-clock minutes. Daylight-saving transitions:
    /// - a wall time that does not exist (skipped in spring) runs once, at the first valid
    ///   instant after the gap (the transition; `30 2 * * *` in New York runs at 03:00 EDT);
    ///   several skipped wall times there collapse into that one run;
    /// - a wall time that occurs twice (autumn) runs once, at its first occurrence.
    public func next(after instant: Date) -> Date? {
        switch self {
        case .every(let seconds):
            let t = instant.timeIntervalSince1970
            var k = Int64((t / Double(seconds)).rounded(.down))
            // Guard against floating-point edges: the result must be strictly later.
            while Double((k + 1) * seconds) <= t { k += 1 }
            while k > Int64.min / 2, Double(k * seconds) > t { k -= 1 }
            return Date(timeIntervalSince1970: Double((k + 1) * seconds))
        case .cron(let expression, let zone):
            let t = instant.timeIntervalSince1970
            let whole = Int64(t.rounded(.down))
            let wall = whole + Int64(zone.secondsFromGMT(for: instant))
            var start = (wall.floorDivided(by: 60) + 1) * 60
            for _ in 0..<100_000 {
                guard let candidate = expression.nextWallMinute(atOrAfter: start) else { return nil }
                let resolved = Self.instant(ofWall: candidate, in: zone)
                if Double(resolved) > t { return Date(timeIntervalSince1970: Double(resolved)) }
                start = candidate + 60
            }
            return nil
        }
    }

    /// The instant (seconds since 1970) of a wall-clock time in `zone`: its first occurrence
    /// when it occurs twice, the end of the gap when it does not occur.
    static func instant(ofWall wall: Int64, in zone: TimeZone) -> Int64 {
        func offset(_ seconds: Int64) -> Int64 {
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
        }
        let before = offset(wall - 86_400)
        let after = offset(wall + 86_400)
        let valid = [before, after].filter { offset(wall - $0) == $0 }.map { wall - $0 }
        if let first = valid.min() { return first }
        // A gap: the transition lies between the two readings; find its first second.
        var low = wall - max(before, after)
        var high = wall - min(before, after)
        let target = offset(high)
        while high - low > 1 {
            let mid = low + (high - low) / 2
            if offset(mid) == target { high = mid } else { low = mid }
        }
        return high
    }

    /// Calls `body` with each slot at or after `start` while `condition` holds, at most `cap` times;
    /// returns how many slots were visited.
    @discardableResult
    public func forEachSlot(from start: Date, while condition: (Date) -> Bool, cap: Int = 100_000,
                            _ body: (Date) -> Void) -> Int {
        var count = 0
        var cursor = next(after: start.addingTimeInterval(-0.000_5))
        while let slot = cursor, count < cap, condition(slot) {
            body(slot)
            count += 1
            cursor = next(after: slot)
        }
        return count
    }

    /// The last `count` slots in `[lower, upper)`, oldest first, found by looking back in
    /// growing windows so that a long outage costs little.
    public func lastSlots(_ count: Int, from lower: Date, before upper: Date) -> [Date] {
        guard count > 0, lower < upper else { return [] }
        var window: TimeInterval = 3_600
        while true {
            let start = max(lower, upper.addingTimeInterval(-window))
            var found: [Date] = []
            forEachSlot(from: start, while: { $0 < upper }, cap: 1_000_000) { slot in
                found.append(slot)
                if found.count > 2 * count { found.removeFirst(found.count - count) }
            }
            if found.count >= count || start == lower { return Array(found.suffix(count)) }
            window *= 8
        }
    }
}

/// What to do with the slots that fell due while no worker ran the schedule.
public enum MissedRunPolicy: String, Sendable, CaseIterable {
    /// Run none of them.
    case skip
    /// Run the latest of them (the default).
    case one
    /// Run each of them, up to ``SchedulePlan/maximumRuns`` per pass.
    case all

    public static let `default` = MissedRunPolicy.one
}

/// One scheduler pass over one due schedule: which slots to enqueue, which were missed,
/// and the next run. A pure function of the rule, the stored next run, the time and the policy.
public struct SchedulePlan: Sendable, Equatable {
    /// The most runs one pass enqueues for one schedule (`--missed all` after a long stop):
    /// older missed slots beyond it are skipped and counted as missed.
    public static let maximumRuns = 1_000
    /// Missed slots counted one by one at most (a longer stop counts this many).
    public static let countCap = 100_000

    /// The slots to enqueue now, oldest first.
    public var runs: [Date]
    /// How many due slots are not run (by policy, or beyond ``maximumRuns``).
    public var missedCount: Int
    /// The latest missed slots (at most 10), oldest first, for the log.
    public var missedSample: [Date]
    /// The first slot after `now`: the schedule's new next run (nil: the rule never fires again).
    public var nextRun: Date?

    /// Plans a pass. Slots no more than `tolerance` before `now` are on time and always run;
    /// older due slots (`nextRun` up to then) are missed, and `policy` decides about them.
    public static func make(rule: ScheduleRule, nextRun: Date, now: Date, policy: MissedRunPolicy,
                            tolerance: Duration, maximumRuns: Int = SchedulePlan.maximumRuns) -> SchedulePlan {
        let cutoff = now.addingTimeInterval(-tolerance.timeInterval)
        let onTimeStart = max(nextRun, cutoff)
        var onTime: [Date] = []
        rule.forEachSlot(from: onTimeStart, while: { $0 <= now }) { onTime.append($0) }
        var overflow = 0
        if onTime.count > maximumRuns {
            overflow = onTime.count - maximumRuns
            onTime.removeFirst(overflow)
        }
        var kept: [Date] = []
        var missedCount = overflow
        var sample: [Date] = []
        if nextRun < onTimeStart {
            let keep: Int = switch policy {
            case .skip: 0
            case .one: onTime.isEmpty ? 1 : 0
            case .all: max(0, maximumRuns - onTime.count)
            }
            let latest = rule.lastSlots(keep + 10, from: nextRun, before: onTimeStart)
            kept = Array(latest.suffix(keep))
            sample = Array(latest.dropLast(kept.count).suffix(10))
            let total = rule.forEachSlot(from: nextRun, while: { $0 < onTimeStart }, cap: countCap) { _ in }
            missedCount += max(0, total - kept.count)
        }
        return SchedulePlan(runs: kept + onTime, missedCount: missedCount, missedSample: sample,
                            nextRun: rule.next(after: now))
    }
}
