import CourierCore
import CourierStore
import Foundation

/// The span of one attempt, as pure decisions: which trace it is in, its parent and links,
/// whether it is recorded, and its name, attributes, events and status once it ended. Time
/// and ids come in as values (ids from the caller's generator), so tests fix both.
///
/// Following the OpenTelemetry messaging conventions, an attempt is a `CONSUMER` span named
/// `process <queue>`. It links to the span the job was enqueued in (its `traceparent`), and,
/// for a retry, to the previous attempt's span, whose context the worker wrote into that
/// attempt's error entry (`errors[-1].traceparent`): the job's row carries it, so no
/// worker needs to remember it and no id has to be derived. Every attempt of a job stays in
/// one trace: the enqueuing trace, else the first attempt's. With ``childOfEnqueue`` the
/// enqueuing span is also its parent.
struct AttemptSpans: Sendable {
    var sampler: TraceSampler
    var childOfEnqueue: Bool

    /// A started attempt span: enough to propagate it and, at the end, to build it.
    struct Started: Sendable, Equatable {
        /// The attempt span's context; its sampled flag is the sampling decision.
        let context: TraceContext
        let parentSpanID: UInt64?
        let traceState: String?
        let links: [SpanData.Link]
        let startUnixNano: UInt64
        /// How long the job had been due when the attempt started (nil when unknown).
        let waitedMilliseconds: Int64?

        /// Whether the span is recorded and exported.
        var isRecorded: Bool { context.isSampled }
    }

    /// How an attempt ended, for the span's events and status.
    enum End: Sendable, Equatable {
        case succeeded
        /// Retried after `delay`; `destinationPause` when the destination's Retry-After holds
        /// every job of it back that long.
        case retry(delay: Duration, destinationPause: Duration?)
        case deadLettered(DeadLetterReason)
        /// Back to the queue without using an attempt (`reason` says why: the destination was
        /// held back after the claim, or this worker's configuration cannot run the job).
        case handedBack(reason: String)
    }

    /// Starts the span of `job`'s attempt at `now`.
    func start(_ job: ClaimedJob, now: Date, ids: inout some RandomNumberGenerator) -> Started {
        let enqueue = job.traceparent.flatMap { TraceContext(traceparent: $0) }
        let previous = job.previousAttemptTraceparent.flatMap { TraceContext(traceparent: $0) }
        let trace = enqueue ?? previous
        var high = trace?.traceIDHigh ?? 0, low = trace?.traceIDLow ?? 0
        while high == 0 && low == 0 {
            high = ids.next()
            low = ids.next()
        }
        var spanID: UInt64 = 0
        while spanID == 0 { spanID = ids.next() }
        let parent = childOfEnqueue ? enqueue : nil
        let sampled = sampler.shouldSample(traceIDLow: low, parentSampled: parent.map(\.isSampled))
        var links: [SpanData.Link] = []
        if let enqueue {
            links.append(SpanData.Link(context: enqueue, traceState: job.tracestate,
                                       attributes: [SpanData.Attribute("courier.link", .string("enqueue"))]))
        }
        if let previous {
            links.append(SpanData.Link(context: previous, attributes: [SpanData.Attribute("courier.link", .string("previous_attempt"))]))
        }
        let waited = job.runAt.map { max(0, Int64(now.timeIntervalSince($0) * 1000)) }
        return Started(context: TraceContext(traceIDHigh: high, traceIDLow: low, spanID: spanID, flags: sampled ? 1 : 0),
                       parentSpanID: parent?.spanID, traceState: enqueue != nil ? job.tracestate : nil, links: links,
                       startUnixNano: Self.unixNano(now), waitedMilliseconds: waited)
    }

    /// The finished span of `started`: `job`'s attempt that ended at `now` as `classification`
    /// says and was decided as `end`.
    func finish(_ started: Started, job: ClaimedJob, classification: Classification, end: End, now: Date) -> SpanData {
        let endNano = max(started.startUnixNano, Self.unixNano(now))
        var attributes: [SpanData.Attribute] = [
            .init("messaging.system", .string("courier")),
            .init("messaging.operation.type", .string("process")),
            .init("messaging.operation.name", .string("process")),
            .init("messaging.destination.name", .string(job.queue)),
            .init("messaging.message.id", .string(String(job.id))),
            .init("courier.job.attempt", .int(Int64(job.attempt))),
            .init("courier.job.kind", .string(job.kind)),
            .init("courier.destination", .string(job.destination)),
        ]
        if job.kind == "http" {
            attributes.append(.init("http.request.method", .string(job.method)))
            if let url = job.url { attributes.append(.init("url.full", .string(Redaction.redactURL(url)))) }
        }
        if let status = classification.status { attributes.append(.init("http.response.status_code", .int(Int64(status)))) }
        if !classification.succeeded, let errorClass = classification.errorClass {
            attributes.append(.init("error.type", .string(errorClass.rawValue)))
        }
        if let waited = started.waitedMilliseconds { attributes.append(.init("courier.job.waited_ms", .int(waited))) }
        if job.isProbe { attributes.append(.init("courier.breaker.probe", .bool(true))) }

        var events = Self.waitEvents(started, job: job)
        let outcome: String
        switch end {
        case .succeeded:
            outcome = "succeeded"
        case .retry(let delay, let pause):
            outcome = "retry"
            if let pause {
                events.append(.init(name: "courier.destination_paused", timeUnixNano: endNano,
                                    attributes: [.init("courier.pause_ms", .int(Int64(pause.milliseconds)))]))
            }
            events.append(.init(name: "courier.retry_scheduled", timeUnixNano: endNano,
                                attributes: [.init("courier.retry.delay_ms", .int(Int64(delay.milliseconds)))]))
        case .deadLettered(let reason):
            outcome = "dead_lettered"
            events.append(.init(name: "courier.dead_lettered", timeUnixNano: endNano,
                                attributes: [.init("courier.dead_letter.reason", .string(reason.rawValue))]))
        case .handedBack(let reason):
            outcome = "handed_back"
            events.append(.init(name: "courier.handed_back", timeUnixNano: endNano,
                                attributes: [.init("courier.reason", .string(reason))]))
        }
        attributes.append(.init("courier.outcome", .string(outcome)))
        let failed: Bool
        switch end {
        case .retry, .deadLettered: failed = !classification.succeeded
        case .succeeded, .handedBack: failed = false
        }
        let message = failed ? String(classification.message.prefix(512)) : nil
        return SpanData(context: started.context, parentSpanID: started.parentSpanID, traceState: started.traceState,
                        name: "process \(job.queue)", kind: .consumer, startUnixNano: started.startUnixNano, endUnixNano: endNano,
                        attributes: attributes, events: events, links: started.links,
                        statusCode: failed ? .error : .unset, statusMessage: message)
    }

    /// What held the job back before this attempt, as events at the attempt's start: its
    /// destination's breaker (`courier.breaker_held`, the time it was due while held, summed by
    /// the keeper) and its destination's traffic policy (`courier.traffic_wait`, for a job claimed
    /// through the gated claim: its time due before the claim, which is spent waiting for a slot,
    /// a token or the retry budget, or for a free worker like any job's).
    static func waitEvents(_ started: Started, job: ClaimedJob) -> [SpanData.Event] {
        var events: [SpanData.Event] = []
        if let held = job.heldMilliseconds, held > 0 {
            events.append(.init(name: "courier.breaker_held", timeUnixNano: started.startUnixNano,
                                attributes: [.init("courier.held_ms", .int(held))]))
        }
        if job.claimedThroughGate, let waited = started.waitedMilliseconds, waited > 0 {
            events.append(.init(name: "courier.traffic_wait", timeUnixNano: started.startUnixNano,
                                attributes: [.init("courier.waited_ms", .int(waited))]))
        }
        return events
    }

    /// Nanoseconds since 1970, to the microsecond (what a `Date` holds exactly at today's dates).
    static func unixNano(_ date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970
        return seconds <= 0 ? 0 : UInt64((seconds * 1_000_000).rounded()) * 1000
    }
}
