import CourierCore
import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The span of an attempt as pure decisions (AttemptSpans), time and ids fixed; and how the
/// tracing configuration is read from OTEL_* variables and flags.
@Suite struct AttemptSpansTests {
    static let enqueue = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func job(attempt: Int = 1, traceparent: String? = enqueue, previous: String? = nil,
                    url: String = "https://api.example.com/hooks?api_key=SECRET123&x=1") -> ClaimedJob {
        ClaimedJob(id: 42, queue: "webhooks", attempt: attempt, destination: "https://api.example.com:443", method: "POST",
                   url: url, traceparent: traceparent, tracestate: traceparent == nil ? nil : "app=checkout",
                   runAt: now.addingTimeInterval(-1.5), previousAttemptTraceparent: previous)
    }

    static let failure = Classification(succeeded: false, errorClass: .server, status: 503, message: "HTTP 503 from the server",
                                        mayHaveBeenDelivered: true, retryable: true)

    @Test func aFirstAttemptJoinsTheEnqueuingTraceAndLinksToItsSpan() throws {
        var ids = SplitMix64(seed: 7)
        let spans = AttemptSpans(sampler: .parentBased(root: .alwaysOn), childOfEnqueue: false)
        let started = spans.start(Self.job(), now: Self.now, ids: &ids)
        let enqueue = try #require(TraceContext(traceparent: Self.enqueue))
        #expect(started.context.traceIDHex == enqueue.traceIDHex)
        #expect(started.context.spanID != enqueue.spanID && started.context.spanID != 0)
        #expect(started.parentSpanID == nil, "linked, not parented, by default")
        #expect(started.links == [SpanData.Link(context: enqueue, traceState: "app=checkout",
                                                attributes: [.init("courier.link", .string("enqueue"))])])
        #expect(started.waitedMilliseconds == 1500)
        #expect(started.isRecorded)
        // The same seed gives the same ids: the generator is the only source.
        var again = SplitMix64(seed: 7)
        #expect(spans.start(Self.job(), now: Self.now, ids: &again) == started)
    }

    @Test func parentingIsOptInAndFollowsTheParentsSampledFlag() throws {
        var ids = SplitMix64(seed: 1)
        let spans = AttemptSpans(sampler: .parentBased(root: .alwaysOn), childOfEnqueue: true)
        let started = spans.start(Self.job(), now: Self.now, ids: &ids)
        #expect(started.parentSpanID == 0x00f0_67aa_0ba9_02b7)
        let unsampled = spans.start(Self.job(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
                                    now: Self.now, ids: &ids)
        #expect(!unsampled.isRecorded && unsampled.context.flags == 0)
    }

    @Test func aRetryLinksToThePreviousAttemptInTheSameTrace() throws {
        var ids = SplitMix64(seed: 3)
        let spans = AttemptSpans(sampler: .alwaysOn, childOfEnqueue: false)
        let first = spans.start(Self.job(traceparent: nil), now: Self.now, ids: &ids)
        #expect(first.links.isEmpty)
        let second = spans.start(Self.job(attempt: 2, traceparent: nil, previous: first.context.traceparent), now: Self.now, ids: &ids)
        #expect(second.context.traceIDHex == first.context.traceIDHex, "a job without enqueue context keeps its first attempt's trace")
        #expect(second.links.map(\.context) == [first.context])
        #expect(second.links.first?.attributes == [.init("courier.link", .string("previous_attempt"))])
    }

    @Test func theFinishedSpanFollowsTheMessagingConventionsAndRedactsTheURL() throws {
        var ids = SplitMix64(seed: 9)
        let spans = AttemptSpans(sampler: .alwaysOn, childOfEnqueue: false)
        let job = Self.job()
        let started = spans.start(job, now: Self.now, ids: &ids)
        let span = spans.finish(started, job: job, classification: Self.failure,
                                end: .retry(delay: .seconds(2), destinationPause: .seconds(30)), now: Self.now.addingTimeInterval(0.25))
        #expect(span.name == "process webhooks")
        #expect(span.kind == .consumer)
        #expect(span.endUnixNano - span.startUnixNano == 250_000_000)
        #expect(span.attribute("messaging.system") == .string("courier"))
        #expect(span.attribute("messaging.destination.name") == .string("webhooks"))
        #expect(span.attribute("messaging.message.id") == .string("42"))
        #expect(span.attribute("courier.job.attempt") == .int(1))
        #expect(span.attribute("courier.destination") == .string("https://api.example.com:443"))
        #expect(span.attribute("http.request.method") == .string("POST"))
        #expect(span.attribute("url.full") == .string("https://api.example.com/hooks?api_key=[REDACTED]&x=1"))
        #expect(span.attribute("http.response.status_code") == .int(503))
        #expect(span.attribute("error.type") == .string("server"))
        #expect(span.attribute("courier.job.waited_ms") == .int(1500))
        #expect(span.events.map(\.name) == ["courier.destination_paused", "courier.retry_scheduled"])
        #expect(span.statusCode == .error && span.statusMessage == "HTTP 503 from the server")
        #expect(span.traceState == "app=checkout")

        let dead = spans.finish(started, job: job, classification: Self.failure, end: .deadLettered(.exhausted), now: Self.now)
        #expect(dead.events.map(\.name) == ["courier.dead_lettered"])
        #expect(dead.events.first?.attributes == [.init("courier.dead_letter.reason", .string("exhausted"))])
        let ok = spans.finish(started, job: job, classification: .success(status: 200), end: .succeeded, now: Self.now)
        #expect(ok.statusCode == .unset && ok.attribute("error.type") == nil && ok.events.isEmpty)
        let held = spans.finish(started, job: job, classification: Self.failure, end: .handedBack(reason: "held"), now: Self.now)
        #expect(held.statusCode == .unset && held.events.map(\.name) == ["courier.handed_back"])
    }

    @Test func breakerHoldsAndTrafficWaitsAreEventsAtTheAttemptsStart() throws {
        var ids = SplitMix64(seed: 5)
        let spans = AttemptSpans(sampler: .alwaysOn, childOfEnqueue: false)
        var job = Self.job()
        let plain = spans.start(job, now: Self.now, ids: &ids)
        let none = spans.finish(plain, job: job, classification: .success(status: 200), end: .succeeded, now: Self.now)
        #expect(none.events.isEmpty, "a job claimed by the plain claim and never held waited for a worker only")

        job.heldMilliseconds = 61_000
        job.claimedThroughGate = true
        let started = spans.start(job, now: Self.now, ids: &ids)
        let span = spans.finish(started, job: job, classification: Self.failure,
                                end: .retry(delay: .seconds(2), destinationPause: nil), now: Self.now.addingTimeInterval(1))
        #expect(span.events.map(\.name) == ["courier.breaker_held", "courier.traffic_wait", "courier.retry_scheduled"])
        #expect(span.events[0].attributes == [.init("courier.held_ms", .int(61_000))])
        #expect(span.events[1].attributes == [.init("courier.waited_ms", .int(1500))])
        #expect(span.events[0].timeUnixNano == started.startUnixNano && span.events[1].timeUnixNano == started.startUnixNano)

        job.heldMilliseconds = 0
        let due = ClaimedJob(id: 1, attempt: 1, destination: "d", url: nil, runAt: Self.now.addingTimeInterval(5))
        var gatedNotLate = due
        gatedNotLate.claimedThroughGate = true
        let early = spans.start(gatedNotLate, now: Self.now, ids: &ids)
        #expect(AttemptSpans.waitEvents(early, job: gatedNotLate).isEmpty, "no wait when the job was claimed as it fell due")
        #expect(AttemptSpans.waitEvents(spans.start(job, now: Self.now, ids: &ids), job: job).map(\.name) == ["courier.traffic_wait"],
                "a hold of 0 ms is no event")
    }

    @Test func ratioSamplingDecidesByTraceSoEveryAttemptAgrees() {
        var ids = SplitMix64(seed: 11)
        let none = AttemptSpans(sampler: .parentBased(root: .traceIDRatio(0)), childOfEnqueue: false)
        #expect(!none.start(Self.job(traceparent: nil), now: Self.now, ids: &ids).isRecorded)
        let all = AttemptSpans(sampler: .parentBased(root: .traceIDRatio(1)), childOfEnqueue: false)
        #expect(all.start(Self.job(traceparent: nil), now: Self.now, ids: &ids).isRecorded)
    }

    @Test func propagationCoversAnOriginsSubKeys() {
        let propagation = TracePropagation()
        #expect(!propagation.propagates("https://a.example:443"))
        propagation.update(["https://a.example:443"])
        #expect(propagation.propagates("https://a.example:443"))
        #expect(propagation.propagates("https://a.example:443/billing"))
        #expect(!propagation.propagates("https://b.example:443"))
        #expect(!propagation.propagates("job:noop"))
    }

    @Test func theConfigurationIsReadFromTheStandardVariables() throws {
        #expect(try TracingConfiguration.read(environment: [:]) == nil, "off when nothing is configured")
        let base = try #require(try TracingConfiguration.read(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(base.endpoint == "http://collector:4318/v1/traces")
        #expect(base.sampler == .parentBased(root: .alwaysOn))
        #expect(base.resource.first == .init("service.name", .string("jobworker")))
        let traces = try #require(try TracingConfiguration.read(environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/custom",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b,x-team=web",
            "OTEL_SERVICE_NAME": "hooks",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment=prod",
            "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        ]))
        #expect(traces.endpoint == "http://traces:4318/custom", "the traces endpoint is used as is")
        #expect(traces.headers == [HTTPHeader(name: "api-key", value: "a b"), HTTPHeader(name: "x-team", value: "web")])
        #expect(traces.resource == [.init("service.name", .string("hooks")), .init("deployment.environment", .string("prod"))])
        #expect(traces.sampler == .traceIDRatio(0.1))
        #expect(traces.scheduleDelay == .milliseconds(100))
        let flags = try #require(try TracingConfiguration.read(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"],
                                                               endpointFlag: "http://flag:4318", sampleRatioFlag: 0.5,
                                                               childOfEnqueue: true))
        #expect(flags.endpoint == "http://flag:4318/v1/traces")
        #expect(flags.sampler == .parentBased(root: .traceIDRatio(0.5)))
        #expect(flags.childOfEnqueue)
        #expect(try TracingConfiguration.read(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"]) == nil)
        #expect(throws: ValidationError.self) { try TracingConfiguration.read(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"]) }
        #expect(throws: ValidationError.self) {
            try TracingConfiguration.read(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])
        }
    }
}
