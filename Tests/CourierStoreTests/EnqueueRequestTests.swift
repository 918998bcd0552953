import CourierCore
import CourierStore
import Foundation
import Testing

@Suite struct EnqueueRequestTests {
    @Test func jsonLineWithEveryField() throws {
        let line = """
            {"url":"https://api.example.com/v1/hook","method":"put","headers":{"X-A":"1","Authorization":{"secret":"TOKEN"}},
             "body":{"b":2,"a":1},"queue":"sync","priority":-3,"run_at":"2030-01-01T00:00:00Z","max_attempts":7,
             "deadline":"2030-01-02T00:00:00.5Z","idempotency_key":"k-1","unique_key":"u-1","destination":"partner",
             "timeout_ms":1500,"expect_content_type":"application/json"}
            """.replacingOccurrences(of: "\n", with: "")
        let r = try EnqueueRequest(jsonLine: line)
        #expect(r.url == "https://api.example.com/v1/hook")
        #expect(r.method == "put")
        #expect(r.headers.map(\.name) == ["Authorization", "X-A"])
        #expect(r.headers[0].value == .secret(name: "TOKEN"))
        #expect(r.body == #"{"b":2,"a":1}"#, "a JSON body is kept exactly as written")
        #expect(r.queue == "sync")
        #expect(r.priority == -3)
        #expect(r.runAt == Date(timeIntervalSince1970: 1_893_456_000))
        #expect(r.maxAttempts == 7)
        #expect(r.deadline == Date(timeIntervalSince1970: 1_893_542_400.5))
        #expect(r.idempotencyKey == .custom("k-1"))
        #expect(r.uniqueKey == "u-1")
        #expect(r.destination == "partner")
        #expect(r.timeoutMilliseconds == 1500)
        #expect(r.expectContentType == "application/json")
        try r.validate(now: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func absentKeyIsGeneratedAndNullKeyIsNone() throws {
        #expect(try EnqueueRequest(jsonLine: #"{"url":"https://e.com"}"#).idempotencyKey == .generated)
        #expect(try EnqueueRequest(jsonLine: #"{"url":"https://e.com","idempotency_key":null}"#).idempotencyKey == .none)
    }

    @Test(arguments: [
        (#"not json"#, "line"),
        (#"[1]"#, "line"),
        (#"{}"#, "url"),
        (#"{"url":5}"#, "url"),
        (#"{"url":"https://e.com","prio":1}"#, "prio"),
        (#"{"url":"https://e.com","priority":"high"}"#, "priority"),
        (#"{"url":"https://e.com","priority":1.5}"#, "priority"),
        (#"{"url":"https://e.com","max_attempts":true}"#, "max_attempts"),
        (#"{"url":"https://e.com","run_at":"tomorrow"}"#, "run_at"),
        (#"{"url":"https://e.com","headers":"x"}"#, "headers"),
        (#"{"url":"https://e.com","headers":{"A":1}}"#, "headers"),
        (#"{"url":"https://e.com","idempotency_key":7}"#, "idempotency_key"),
    ])
    func malformedLinesNameTheField(line: String, field: String) {
        #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: line) }
        do {
            _ = try EnqueueRequest(jsonLine: line)
        } catch {
            #expect(error.field == field)
        }
    }

    @Test func validationNamesTheField() {
        let now = Date()
        func field(_ change: (inout EnqueueRequest) -> Void) -> String? {
            var r = EnqueueRequest(url: "https://example.com/x")
            change(&r)
            do {
                try r.validate(now: now)
                return nil
            } catch {
                return error.field
            }
        }
        #expect(field { _ in } == nil)
        #expect(field { $0.url = "mailto:a@b" } == "url")
        #expect(field { $0.method = "BAD METHOD" } == "method")
        #expect(field { $0.headers = [("Bad Name", .literal("x"))] } == "headers")
        #expect(field { $0.headers = [("X-A", .literal("a\r\nInjected: 1"))] } == "headers")
        #expect(field { $0.headers = [("X-A", .literal("1")), ("x-a", .literal("2"))] } == "headers")
        #expect(field { $0.queue = "" } == "queue")
        #expect(field { $0.priority = 99_999 } == "priority")
        #expect(field { $0.maxAttempts = 0 } == "max_attempts")
        #expect(field { $0.deadline = now.addingTimeInterval(-1) } == "deadline")
        #expect(field { $0.runAt = now.addingTimeInterval(60); $0.deadline = now.addingTimeInterval(30) } == "deadline")
        #expect(field { $0.idempotencyKey = .custom("") } == "idempotency_key")
        #expect(field { $0.uniqueKey = String(repeating: "u", count: 256) } == "unique_key")
        #expect(field { $0.timeoutMilliseconds = 0 } == "timeout_ms")
        #expect(field { $0.expectContentType = "json" } == "expect_content_type")
    }
}

@Suite struct ScheduleTemplateTests {
    @Test func everyEnqueueFieldButTheRunsOwnIsKeptBySchedules() {
        #expect(ScheduleTemplate.httpFields == EnqueueRequest.jsonFields.subtracting(ScheduleTemplate.runFields))
    }

    @Test func aTemplateRoundTripsThroughItsJSON() throws {
        let text = #"{"url": "https://x.example.com/a", "method": "put", "headers": {"A": "1", "B": {"secret": "TOKEN"}}, "body": {"n": 1}, "queue": "q", "priority": -3, "max_attempts": 7, "unique_key": "u", "destination": "d", "timeout_ms": 500, "expect_content_type": "application/json", "within_ms": 9000}"#
        let template = try ScheduleTemplate(json: text)
        #expect(try ScheduleTemplate(json: template.json) == template)
        guard case .http(let request) = template.job else { Issue.record("not an HTTP job"); return }
        #expect(request.method == "PUT")
        // A body that is not a string is kept as compact JSON with sorted keys (documented in the README).
        #expect(request.body == #"{"n":1}"#)
        #expect(template.withinMilliseconds == 9000)
        for (json, field) in [(#"{"url": "https://x.example.com/", "run_at": "2024-01-01T00:00:00Z"}"#, "run_at"),
                              (#"{"url": "https://x.example.com/", "idempotency_key": null}"#, "idempotency_key"),
                              (#"{"url": "https://x.example.com/", "colour": "red"}"#, "colour"),
                              (#"{"kind": "a.b", "url": "https://x.example.com/"}"#, "url"),
                              (#"{"kind": "a.b", "args": [1]}"#, "args"),
                              (#"{"url": "https://x.example.com/", "within_ms": 0}"#, "within_ms")] {
            #expect(throws: ValidationError.self) { try ScheduleTemplate(json: json) }
            do { _ = try ScheduleTemplate(json: json) } catch { #expect(error.field == field, "\(json): \(error)") }
        }
    }
}
