import CourierCore
import Foundation
import Testing

@Suite struct CronExpressionTests {
    static func utc(_ text: String) -> Date {
        try! Date(text, strategy: Date.ISO8601FormatStyle())
    }

    static func next(_ expression: String, zone: String = "UTC", after: String, count: Int = 3) throws -> [String] {
        let rule = ScheduleRule.cron(try CronExpression(parsing: expression), timeZone: TimeZone(identifier: zone)!)
        var cursor = utc(after)
        var out: [String] = []
        for _ in 0..<count {
            cursor = try #require(rule.next(after: cursor))
            out.append(cursor.formatted(Date.ISO8601FormatStyle()))
        }
        return out
    }

    @Test(arguments: [
        ("61 * * * *", "--cron: minute field: 61 is out of range 0-59"),
        ("* * *", "--cron: expected 5 fields (minute hour day-of-month month day-of-week), got 3"),
        ("*/0 * * * *", "--cron: minute field: step must be at least 1, got 0"),
        ("* 24 * * *", "--cron: hour field: 24 is out of range 0-23"),
        ("* * 0 * *", "--cron: day-of-month field: 0 is out of range 1-31"),
        ("* * * 13 *", "--cron: month field: 13 is out of range 1-12"),
        ("* * * * 8", "--cron: day-of-week field: 8 is out of range 0-7"),
        ("* * * FOO *", "--cron: month field: 'FOO' is not a number from 1 to 12 or a name such as FEB"),
        ("5-2 * * * *", "--cron: minute field: range '5-2' runs backwards"),
        ("1,,2 * * * *", "--cron: minute field: empty list item in '1,,2'"),
        ("*/x * * * *", "--cron: minute field: step 'x' is not a positive number"),
        ("0 0 30 2 *", "--cron: day-of-month field: '30' never occurs in the months of '2'"),
        ("@reboot", "--cron: unknown macro '@reboot'; use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"),
        ("* * * * * *", "--cron: expected 5 fields (minute hour day-of-month month day-of-week), got 6"),
        // Valid fields, but longer than courier.schedules keeps: refused here, naming the flag.
        ((0...59).map(String.init).joined(separator: ",") + " " + (0...23).map(String.init).joined(separator: ",") + " * * *",
         "--cron: at most 200 characters, got 237"),
    ])
    func refusesBadExpressionsNamingTheField(text: String, message: String) {
        #expect(throws: ValidationError.self) { try CronExpression(parsing: text, field: "--cron") }
        do {
            _ = try CronExpression(parsing: text, field: "--cron")
        } catch {
            #expect(error.description == message.replacingOccurrences(of: "'", with: "\""))
        }
    }

    @Test func refusesUnknownTimeZonesNamingTheFlag() {
        do {
            _ = try ScheduleRule.timeZone(named: "Mars/Olympus_Mons", field: "--timezone")
            Issue.record("accepted an unknown zone")
        } catch {
            #expect(error.field == "--timezone")
            #expect(error.message.contains("Mars/Olympus_Mons"))
        }
        #expect((try? ScheduleRule.timeZone(named: "Europe/Berlin")) != nil)
    }

    @Test func intervalsUseTheDurationGrammarAndAreWholeSeconds() throws {
        #expect(try ScheduleRule.interval("1s") == 1)
        #expect(try ScheduleRule.interval("1h30m") == 5400)
        #expect(throws: ValidationError.self) { try ScheduleRule.interval("500ms", field: "--every") }
        #expect(throws: ValidationError.self) { try ScheduleRule.interval("1.5s", field: "--every") }
        #expect(throws: ValidationError.self) { try ScheduleRule.interval("soon", field: "--every") }
        let rule = ScheduleRule.every(seconds: 3600)
        #expect(rule.next(after: Self.utc("2024-05-01T10:00:00Z")) == Self.utc("2024-05-01T11:00:00Z"))
        #expect(rule.next(after: Self.utc("2024-05-01T10:59:59Z")) == Self.utc("2024-05-01T11:00:00Z"))
        #expect(ScheduleRule.every(seconds: 1).next(after: Date(timeIntervalSince1970: 100.25)) == Date(timeIntervalSince1970: 101))
    }

    @Test func namesMacrosListsAndSteps() throws {
        #expect(try Self.next("0 9 * * MON-FRI", after: "2024-05-03T10:00:00Z") ==
                ["2024-05-06T09:00:00Z", "2024-05-07T09:00:00Z", "2024-05-08T09:00:00Z"])
        #expect(try Self.next("@monthly", after: "2024-01-15T00:00:00Z", count: 2) == ["2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"])
        #expect(try Self.next("*/20 * * * *", after: "2024-01-01T00:00:00Z") ==
                ["2024-01-01T00:20:00Z", "2024-01-01T00:40:00Z", "2024-01-01T01:00:00Z"])
        #expect(try Self.next("0 0 * jan,Jul 7", after: "2024-01-01T00:00:00Z", count: 2) ==
                ["2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z"])
        #expect(try Self.next("0 0 29 2 *", after: "2024-03-01T00:00:00Z", count: 1) == ["2028-02-29T00:00:00Z"])
    }

    @Test func dayOfMonthAndDayOfWeekFollowTheClassicOrRule() throws {
        // Both restricted: the 13th OR a Friday.
        #expect(try Self.next("0 0 13 * 5", after: "2024-09-01T00:00:00Z") ==
                ["2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z"])
        // A day field starting with '*' restricts nothing beyond itself: the 1st AND an even weekday.
        #expect(try Self.next("0 0 1 * */2", after: "2024-01-01T00:00:00Z", count: 2) ==
                ["2024-02-01T00:00:00Z", "2024-06-01T00:00:00Z"])
    }

    @Test func springGapRunsOnceAtTheEndOfTheGap() throws {
        // New York, 2024-03-10: 02:00 EST jumps to 03:00 EDT (07:00Z).
        #expect(try Self.next("30 2 * * *", zone: "America/New_York", after: "2024-03-09T12:00:00Z") ==
                ["2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z", "2024-03-12T06:30:00Z"])
        // Four skipped wall times and a real 03:00 collapse into one run.
        #expect(try Self.next("*/15 2,3 * * *", zone: "America/New_York", after: "2024-03-10T06:50:00Z") ==
                ["2024-03-10T07:00:00Z", "2024-03-10T07:15:00Z", "2024-03-10T07:30:00Z"])
        // Lord Howe shifts by 30 minutes: 2024-10-06 02:00 +10:30 becomes 02:30 +11:00 (15:30Z the day before).
        #expect(try Self.next("15 2 * * *", zone: "Australia/Lord_Howe", after: "2024-10-05T12:00:00Z", count: 2) ==
                ["2024-10-05T15:30:00Z", "2024-10-06T15:15:00Z"])
    }

    @Test func autumnRepeatRunsOnceAtTheFirstOccurrence() throws {
        // Berlin, 2024-10-27: 03:00 CEST goes back to 02:00 CET; 02:30 happens at 00:30Z and 01:30Z.
        #expect(try Self.next("30 2 * * *", zone: "Europe/Berlin", after: "2024-10-26T12:00:00Z", count: 2) ==
                ["2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"])
        // Every 30 minutes: the repeated wall times are not run again.
        #expect(try Self.next("*/30 * * * *", zone: "Europe/Berlin", after: "2024-10-27T00:10:00Z", count: 4) ==
                ["2024-10-27T00:30:00Z", "2024-10-27T02:00:00Z", "2024-10-27T02:30:00Z", "2024-10-27T03:00:00Z"])
        // Lord Howe, 2024-04-07: 02:00 +11:00 goes back to 01:30 +10:30.
        #expect(try Self.next("45 1 * * *", zone: "Australia/Lord_Howe", after: "2024-04-06T12:00:00Z", count: 2) ==
                ["2024-04-06T14:45:00Z", "2024-04-07T15:15:00Z"])
    }
}

@Suite struct SchedulePlanTests {
    static let minute = ScheduleRule.every(seconds: 60)
    static let t0 = Date(timeIntervalSince1970: 1_714_557_600)   // 2024-05-01T10:00:00Z

    @Test func onTimeSlotsAllRun() {
        let plan = SchedulePlan.make(rule: Self.minute, nextRun: Self.t0, now: Self.t0.addingTimeInterval(3),
                                     policy: .skip, tolerance: .seconds(10))
        #expect(plan.runs == [Self.t0])
        #expect(plan.missedCount == 0)
        #expect(plan.nextRun == Self.t0.addingTimeInterval(60))
    }

    @Test(arguments: [(MissedRunPolicy.skip, 0), (.one, 1), (.all, 60)])
    func missedSlotsFollowThePolicy(policy: MissedRunPolicy, runs: Int) {
        // Down from 10:00 to 11:00:30: 61 slots due (10:00 ... 11:00), all more than 10 s late.
        let now = Self.t0.addingTimeInterval(3630)
        let plan = SchedulePlan.make(rule: Self.minute, nextRun: Self.t0, now: now, policy: policy, tolerance: .seconds(10))
        let due = 61
        switch policy {
        case .skip: #expect(plan.runs.isEmpty)
        case .one: #expect(plan.runs == [Self.t0.addingTimeInterval(3600)])
        case .all: #expect(plan.runs.count == due)
        }
        #expect(plan.runs.count == (policy == .all ? due : runs))
        #expect(plan.missedCount == due - plan.runs.count)
        #expect(plan.missedSample.count == min(10, plan.missedCount))
        #expect(plan.nextRun == Self.t0.addingTimeInterval(3660))
    }

    @Test func allIsBounded() {
        let now = Self.t0.addingTimeInterval(86_400 * 3 + 30)  // three days of minutes: 4321 due slots
        let plan = SchedulePlan.make(rule: Self.minute, nextRun: Self.t0, now: now, policy: .all, tolerance: .seconds(10))
        #expect(plan.runs.count == SchedulePlan.maximumRuns)
        #expect(plan.runs.last == Self.t0.addingTimeInterval(86_400 * 3))
        #expect(plan.missedCount == 4321 - SchedulePlan.maximumRuns)
    }

    @Test func oneFindsTheLatestSlotOfARareCronAfterALongStop() throws {
        let rule = ScheduleRule.cron(try CronExpression(parsing: "0 0 1 * *"), timeZone: TimeZone(identifier: "UTC")!)
        let next = CronExpressionTests.utc("2023-01-01T00:00:00Z")
        let now = CronExpressionTests.utc("2024-05-20T00:00:00Z")
        let plan = SchedulePlan.make(rule: rule, nextRun: next, now: now, policy: .one, tolerance: .seconds(10))
        #expect(plan.runs == [CronExpressionTests.utc("2024-05-01T00:00:00Z")])
        #expect(plan.missedCount == 16)
        #expect(plan.nextRun == CronExpressionTests.utc("2024-06-01T00:00:00Z"))
    }
}
