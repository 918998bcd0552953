import CourierCore
import Foundation
import Testing

/// The cron parser and next-occurrence calculator against Python's `croniter`, over
/// generated expressions, time zones and instants, many of them near daylight-saving
/// transitions.
///
/// Where croniter's semantics differ from classic cron, the reference is adjusted, in
/// the Python below, and nowhere else:
/// - croniter treats a day field like `*/2` as restricted and ORs it with the other day
///   field; classic (Vixie) cron treats any field starting with `*` as unrestricted and
///   ANDs. The script passes `day_or` by that rule.
/// - croniter runs a wall time that occurs twice (autumn) twice; Courier runs it once, at
///   its first occurrence. The script drops the second occurrences croniter yields.
/// - croniter reads a one-value range such as `6-6` as `*`; the generator writes ranges
///   with two different ends (a single value is generated as itself).
/// - Skipped wall times (spring): Courier runs them once, at the end of the gap, for every
///   expression. croniter does so when the hour field is restricted (`30 2 * * *`), but
///   drops them when it allows every hour (`*/20 * * * *`, whose next slot comes soon
///   anyway), as Vixie cron does. For those, the comparison leaves out Courier's
///   end-of-gap runs (a run whose wall time does not match the fields), and counts them.
/// - croniter reads a day field that lists every value without starting with `*`
///   (`0-7/1`, `5-6,*/1`) as `*`; classic cron counts it as restricted. Such cases are
///   skipped (and counted); 10,400 are generated so that at least 10,000 are compared.
@Suite struct CronDifferentialTests {
    static let zones = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
                        "Pacific/Chatham", "America/Sao_Paulo", "Europe/London"]
    static let occurrences = 3

    struct Case {
        var expression: String
        var zone: String
        var start: Int64
    }

    /// A random field: `*`, a value, a range, steps, names, lists.
    static func field(_ index: Int, _ random: inout SplitMix64) -> String {
        let (low, high): (Int, Int) = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)][index]
        let months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
        let days = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
        func value() -> String {
            let n = Int.random(in: low...high, using: &random)
            if index == 3, Bool.random(using: &random), Int.random(in: 0..<3, using: &random) == 0 {
                let name = months[n - 1]
                return Bool.random(using: &random) ? name : name.lowercased()
            }
            if index == 4, n < 7, Int.random(in: 0..<4, using: &random) == 0 { return days[n] }
            return String(n)
        }
        func item() -> String {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: return "*"
            case 1, 2: return value()
            case 3, 4:
                // croniter reads a one-value range N-N as '*'; classic cron as N. Generate N-M with N < M.
                let a = Int.random(in: low..<high, using: &random)
                let b = Int.random(in: (a + 1)...high, using: &random)
                return "\(a)-\(b)"
            case 5, 6: return "*/\(Int.random(in: 1...max(2, (high - low) / 2), using: &random))"
            case 7:
                let a = Int.random(in: low..<high, using: &random)
                let b = Int.random(in: (a + 1)...high, using: &random)
                return "\(a)-\(b)/\(Int.random(in: 1...max(1, (high - low) / 3), using: &random))"
            case 8:
                // N/S only where croniter and classic cron agree on the upper end (not day-of-week).
                guard index != 4 else { return value() }
                return "\(Int.random(in: low...high, using: &random))/\(Int.random(in: 1...max(2, (high - low) / 3), using: &random))"
            default: return value()
            }
        }
        if Int.random(in: 0..<4, using: &random) == 0 { return "*" }
        let count = Int.random(in: 0..<5, using: &random) == 0 ? Int.random(in: 2...3, using: &random) : 1
        let items = (0..<count).map { _ in item() }
        // A list with '*' in it is legal but pointless; keep lists of plain items.
        return items.count > 1 ? items.map { $0 == "*" ? value() : $0 }.joined(separator: ",") : items[0]
    }

    /// Expressions aimed at daylight-saving edges: specific early-morning hours and frequent minutes.
    static func edgeExpression(_ random: inout SplitMix64) -> String {
        let forms = ["30 2 * * *", "0 2 * * *", "*/15 * * * *", "0 * * * *", "30 1 * * *", "0,30 1-3 * * *",
                     "15 2,3 * * *", "*/10 1-2 * * *", "45 1 * * 0", "0 3 * * *", "*/30 * * * *", "59 1 * * *",
                     "0 0 * * *", "5 2 * 3,10,4 *", "@hourly", "@daily"]
        return forms[Int.random(in: 0..<forms.count, using: &random)]
    }

    static func makeCases(count: Int) -> [Case] {
        var random = SplitMix64(seed: 0xC0FFEE)
        let macros = CronExpression.macros.map(\.name)
        let from = Date(timeIntervalSince1970: 1_577_836_800)   // 2020-01-01
        var cases: [Case] = []
        while cases.count < count {
            let zoneName = zones[Int.random(in: 0..<zones.count, using: &random)]
            let zone = TimeZone(identifier: zoneName)!
            let nearTransition = zoneName != "UTC" && zoneName != "Asia/Kolkata" && Bool.random(using: &random)
            var start = Int64.random(in: 1_577_836_800...1_893_456_000, using: &random)  // 2020...2030
            if nearTransition {
                // Somewhere within three hours before or after a transition between 2020 and 2030.
                var transition = zone.nextDaylightSavingTimeTransition(after: from)
                for _ in 0..<Int.random(in: 0..<16, using: &random) {
                    transition = transition.flatMap { zone.nextDaylightSavingTimeTransition(after: $0) }
                }
                if let transition {
                    start = Int64(transition.timeIntervalSince1970) + Int64.random(in: -10_800...10_800, using: &random)
                }
            }
            let expression: String
            switch Int.random(in: 0..<20, using: &random) {
            case 0: expression = macros[Int.random(in: 0..<macros.count, using: &random)]
            case 1...6 where nearTransition: expression = edgeExpression(&random)
            default: expression = (0..<5).map { field($0, &random) }.joined(separator: " ")
            }
            // Expressions that can never run are refused by the parser (tested elsewhere).
            guard (try? CronExpression(parsing: expression)) != nil else { continue }
            cases.append(Case(expression: expression, zone: zoneName, start: start))
        }
        return cases
    }

    static let reference = #"""
import sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
from croniter import croniter

N = int(sys.argv[1])
out = []
for line in sys.stdin:
    expr, zone, start = line.rstrip("\n").split("\t")
    tz = ZoneInfo(zone)
    fields = expr.split()
    day_or = True
    if len(fields) == 5 and (fields[2].startswith("*") or fields[4].startswith("*")):
        day_or = False   # classic cron: a day field starting with '*' restricts nothing, so AND
    try:
        if len(fields) == 5 and not (fields[2].startswith("*") and fields[4].startswith("*")):
            expanded = croniter(expr).expanded
            if any(expanded[i] == ["*"] and not fields[i].startswith("*") for i in (2, 4)):
                # croniter reads a day field that lists every value as '*' (and then ANDs); classic cron ORs.
                out.append("SKIP")
                continue
        it = croniter(expr, datetime.fromtimestamp(int(start), tz), day_or=day_or)
        found = []
        while len(found) < N:
            d = it.get_next(datetime)
            wall = d.replace(tzinfo=None)
            first = wall.replace(tzinfo=tz, fold=0)
            if first.utcoffset() != d.utcoffset() and wall.replace(tzinfo=tz, fold=1).utcoffset() == d.utcoffset():
                continue   # the second occurrence of a repeated wall time: Courier runs it once
            found.append(str(int(d.timestamp())))
        out.append(" ".join(found))
    except Exception as e:
        out.append("ERR " + type(e).__name__ + ": " + str(e).replace("\n", " "))
sys.stdout.write("\n".join(out) + "\n")
"""#

    @Test func agreesWithCroniterOnTenThousandExpressionsAndInstants() throws {
        guard let python = ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"], !python.isEmpty else {
            Issue.record("COURIER_TEST_PYTHON is not set: run the tests with scripts/test.sh (the reference is croniter in .venv)")
            return
        }
        let started = ContinuousClock.now
        let cases = Self.makeCases(count: 10_400)
        let generated = ContinuousClock.now
        // The reference runs in two processes, half the cases each, to use both cores.
        let half = cases.count / 2
        let chunks = [Array(cases[..<half]), Array(cases[half...])]
        let runs = try chunks.map { chunk -> (Process, Pipe, Pipe) in
            let input = chunk.map { "\($0.expression)\t\($0.zone)\t\($0.start)" }.joined(separator: "\n") + "\n"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = ["-c", Self.reference, String(Self.occurrences)]
            let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
            process.standardInput = stdin
            process.standardOutput = stdout
            process.standardError = stderr
            try process.run()
            let writer = Thread {
                stdin.fileHandleForWriting.write(Data(input.utf8))
                try? stdin.fileHandleForWriting.close()
            }
            writer.start()
            return (process, stdout, stderr)
        }
        var lines: [String] = []
        for (process, stdout, stderr) in runs {
            let output = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "croniter reference failed: \(errors)")
            lines += output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
        try #require(lines.count == cases.count)
        let referenced = ContinuousClock.now

        var mismatches: [String] = []
        var compared = 0
        var nearEdges = 0
        var gapRunsLeftOut = 0
        var skipped = 0
        for (index, testCase) in cases.enumerated() {
            let expected = lines[index]
            if expected == "SKIP" { skipped += 1; continue }
            let zone = TimeZone(identifier: testCase.zone)!
            let rule = ScheduleRule.cron(try CronExpression(parsing: testCase.expression), timeZone: zone)
            var cursor = Date(timeIntervalSince1970: Double(testCase.start))
            let expression = try CronExpression(parsing: testCase.expression)
            var actual: [String] = []
            var steps = 0
            while actual.count < Self.occurrences, steps < 50 {
                steps += 1
                guard let next = rule.next(after: cursor) else { break }
                cursor = next
                let wall = Int64(next.timeIntervalSince1970) + Int64(zone.secondsFromGMT(for: next))
                let minuteOfDay = Int((wall % 86_400 + 86_400) % 86_400 / 60)
                if expression.runsEveryHour, !expression.matchesTimeOfDay(hour: minuteOfDay / 60, minute: minuteOfDay % 60) {
                    gapRunsLeftOut += 1   // an end-of-gap run croniter does not make (see above)
                    continue
                }
                actual.append(String(Int64(next.timeIntervalSince1970)))
            }
            compared += 1
            if zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(testCase.start)))
                != zone.secondsFromGMT(for: cursor) { nearEdges += 1 }
            if actual.joined(separator: " ") != expected {
                mismatches.append("\(testCase.expression) [\(testCase.zone)] from \(testCase.start): courier \(actual.joined(separator: " ")) croniter \(expected)")
            }
        }
        print("cron differential timing: generate \(generated - started), croniter \(referenced - generated), courier \(ContinuousClock.now - referenced)")
        print("cron differential: \(compared) expressions x \(Self.occurrences) occurrences compared with croniter (\(skipped) skipped: a day field listing every value); \(nearEdges) sequences crossed a UTC-offset change; \(gapRunsLeftOut) end-of-gap runs of every-hour expressions left out; \(mismatches.count) mismatches")
        #expect(compared >= 10_000, "\(skipped) cases skipped")
        #expect(nearEdges > 500, "the generator should cross many daylight-saving transitions")
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, first: \(mismatches.prefix(10).joined(separator: "\n"))")
    }
}
