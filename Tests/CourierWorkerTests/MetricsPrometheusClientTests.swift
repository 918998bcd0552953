@testable import CourierWorker
import CourierCore
import CourierHTTPServer
@testable import CourierStore
import Foundation
import Testing

/// Issue 17, Metrics: every series of the worker's page is read with the real Prometheus
/// text parser (`prometheus-client` from PyPI, in the test command's .venv), per-queue
/// attempt and outcome counters, the request-latency histogram, fleet-wide families exported
/// by one worker only, and queue depths that read 0 when a queue empties.
@Suite struct MetricsPrometheusClientTests {
    /// Parses a page with prometheus_client and returns, per family, its type and samples.
    static let parser = #"""
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        out = {}
        for family in text_string_to_metric_families(sys.stdin.read()):
            out[family.name] = {"type": family.type,
                                "samples": [[s.name, s.labels, s.value] for s in family.samples]}
        print(json.dumps(out))
        """#

    struct Family {
        var type: String
        var samples: [(name: String, labels: [String: String], value: Double)]
    }

    static func parse(_ page: String) throws -> [String: Family] {
        let python = try #require(ProcessInfo.processInfo.environment["COURIER_TEST_PYTHON"], "COURIER_TEST_PYTHON is not set: run scripts/test.sh")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", parser]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(page.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "prometheus_client refused the page: \(problems)")
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]])
        return object.mapValues { entry in
            Family(type: entry["type"] as? String ?? "",
                   samples: (entry["samples"] as? [[Any]] ?? []).map {
                       ($0[0] as? String ?? "", $0[1] as? [String: String] ?? [:], ($0[2] as? NSNumber)?.doubleValue ?? .nan)
                   })
        }
    }

    static func metrics() -> WorkerMetrics {
        let metrics = WorkerMetrics()
        let ok = Classification(succeeded: true, errorClass: nil, message: "ok", mayHaveBeenDelivered: true, retryable: false)
        let failed = Classification(succeeded: false, errorClass: .server, message: "503", mayHaveBeenDelivered: true, retryable: true)
        metrics.recordAttempt(ok, queue: "mail", duration: .milliseconds(30))
        metrics.recordSuccess(afterRetry: false, queue: "mail")
        metrics.recordAttempt(failed, queue: "hooks", duration: .milliseconds(700))
        metrics.recordRetry(delay: .seconds(2), queue: "hooks")
        metrics.recordAttempt(failed, queue: "hooks", duration: .seconds(3))
        metrics.recordDeadLetter(reason: .exhausted, queue: "hooks")
        return metrics
    }

    static let workerID = "00000000-0000-0000-0000-000000000001"

    static func sample(reporter: String?) -> MetricsServerSampler.Sample {
        var known: Set<String> = ["hooks", "mail"]
        return MetricsServerSampler.Sample(
            takenAt: Date(), queueDepths: MetricsServerSampler.zeroFilled([.init(queue: "mail", state: "available", count: 4, oldestDueSeconds: 1)], known: &known),
            deadLetters: ["exhausted": 1], breakerStates: ["open": 1],
            openBreakers: [.init(destination: "https://a.example:443", state: "open", seconds: 9)],
            breakerTransitions: [.init(from: "closed", to: "open", count: 2)], liveWorkers: 2, fleetReporter: reporter)
    }

    static func page(reporter: String?) -> String {
        let state = PrometheusText.WorkerState(workerID: workerID, version: "t", concurrency: 4, inFlight: 0, stopping: false,
                                               databaseReachable: true, queues: ["default", "hooks", "mail"])
        return PrometheusText.workerPage(metrics: metrics().snapshot(), state: state,
                                         sampling: .init(latest: sample(reporter: reporter), successes: 1, failures: 0))
    }

    func value(_ families: [String: Family], _ family: String, _ sample: String? = nil, _ labels: [String: String]) -> Double? {
        families[family]?.samples.first { candidate in
            candidate.name == (sample ?? family) && labels.allSatisfy { candidate.labels[$0.key] == $0.value }
        }?.value
    }

    @Test func theRealParserReadsEverySeries() throws {
        let families = try Self.parse(Self.page(reporter: Self.workerID))
        #expect(families.count >= 25, "\(families.keys.sorted())")
        // prometheus_client names counters without _total; every family has a type it knows.
        for (name, family) in families {
            #expect(["counter", "gauge", "histogram", "summary", "info", "stateset", "unknown"].contains(family.type), "\(name)")
            #expect(family.type != "unknown", "\(name) has no TYPE")
        }
        #expect(families["courier_attempts"]?.type == "counter")
        #expect(families["courier_request_duration_seconds"]?.type == "histogram")
    }

    @Test func attemptsAndOutcomesCarryTheQueue() throws {
        let families = try Self.parse(Self.page(reporter: Self.workerID))
        let attempts = try #require(families["courier_attempts"]?.samples)
        #expect(attempts.allSatisfy { $0.labels["queue"] != nil && $0.labels["class"] != nil })
        #expect(value(families, "courier_attempts", "courier_attempts_total", ["queue": "hooks", "class": "server"]) == 2)
        #expect(value(families, "courier_attempts", "courier_attempts_total", ["queue": "mail", "class": "success"]) == 1)
        #expect(value(families, "courier_attempts", "courier_attempts_total", ["queue": "default", "class": "server"]) == 0,
                "a served queue reads 0 before its first attempt")
        #expect(value(families, "courier_job_outcomes", "courier_job_outcomes_total", ["queue": "hooks", "outcome": "dead_lettered"]) == 1)
        #expect(value(families, "courier_job_outcomes", "courier_job_outcomes_total", ["queue": "hooks", "outcome": "retried"]) == 1)
        #expect(value(families, "courier_job_outcomes", "courier_job_outcomes_total", ["queue": "mail", "outcome": "succeeded"]) == 1)
        // The latency histogram, per queue.
        #expect(value(families, "courier_request_duration_seconds", "courier_request_duration_seconds_bucket", ["queue": "hooks", "le": "1"]) == 1)
        #expect(value(families, "courier_request_duration_seconds", "courier_request_duration_seconds_bucket", ["queue": "hooks", "le": "+Inf"]) == 2)
        #expect(value(families, "courier_request_duration_seconds", "courier_request_duration_seconds_count", ["queue": "mail"]) == 1)
        #expect(abs((value(families, "courier_request_duration_seconds", "courier_request_duration_seconds_sum", ["queue": "hooks"]) ?? 0) - 3.7) < 1e-9)
    }

    @Test func fleetWideFamiliesComeFromOneWorker() throws {
        let reporter = try Self.parse(Self.page(reporter: Self.workerID))
        #expect(value(reporter, "courier_fleet_reporter", nil, [:]) == 1)
        #expect(value(reporter, "courier_breakers", nil, ["state": "open"]) == 1)
        #expect(value(reporter, "courier_breaker_transitions", "courier_breaker_transitions_total", ["from": "closed", "to": "open"]) == 2)
        #expect(value(reporter, "courier_live_workers", nil, [:]) == 2)

        let other = try Self.parse(Self.page(reporter: "00000000-0000-0000-0000-000000000000"))
        #expect(value(other, "courier_fleet_reporter", nil, [:]) == 0)
        for family in ["courier_breakers", "courier_breaker_transitions", "courier_breaker_state_seconds", "courier_queue_depth",
                       "courier_dead_letters_pending", "courier_live_workers"] {
            #expect(other[family]?.samples.isEmpty ?? true, "\(family) is exported by the reporter only")
        }
        // This worker's own counters stay on every worker.
        #expect(value(other, "courier_attempts", "courier_attempts_total", ["queue": "hooks", "class": "server"]) == 2)
    }

    @Test func anEmptiedQueueReadsZero() throws {
        let families = try Self.parse(Self.page(reporter: Self.workerID))
        #expect(value(families, "courier_queue_depth", nil, ["queue": "mail", "state": "available"]) == 4)
        #expect(value(families, "courier_queue_depth", nil, ["queue": "hooks", "state": "available"]) == 0)
        #expect(value(families, "courier_queue_depth", nil, ["queue": "hooks", "state": "running"]) == 0)
        var known: Set<String> = []
        _ = MetricsServerSampler.zeroFilled([.init(queue: "q", state: "running", count: 1, oldestDueSeconds: nil)], known: &known)
        let later = MetricsServerSampler.zeroFilled([], known: &known)
        #expect(later.map(\.count) == [0, 0], "a queue seen once reads 0 after it empties: \(later)")
        #expect(Set(later.map(\.state)) == ["available", "running"])
    }
}
