import CourierCore
import CourierHTTP
import Foundation

/// Exports finished spans over OTLP/HTTP protobuf, in batches, from a bounded queue, on a
/// thread of its own (the service `courier-otlp`). Jobs only append to the queue (one locked
/// append, never a wait): a full queue drops the span and counts it
/// (`courier_spans_dropped_total`), so a slow or dead collector costs no job anything
/// (DESIGN.md invariant 14). A batch the collector could not take (no answer, 429, 502, 503,
/// 504) is tried again after a pause, up to ``TracingConfiguration/exportAttempts`` times,
/// then dropped and counted; while it waits, new spans keep queueing up to the bound.
final class SpanExporter: WorkerService, @unchecked Sendable {
    let name = "courier-otlp"
    let configuration: TracingConfiguration
    private let metrics: WorkerMetrics
    private let logger: Logger
    /// Sends one request body; returns what came of it (a test seam; ``CurlPoster`` in the product).
    private let post: @Sendable ([UInt8]) -> CurlPoster.Outcome
    private let lock = NSLock()
    private var queue: [SpanData] = []
    /// A batch the collector did not take, and how many times it was tried.
    private var retrying: (spans: [SpanData], tries: Int)?
    private var throttle = LogThrottle(interval: .seconds(60))
    /// Wakes this service's thread: a batch is full (installed by the service graph).
    var batchFull: @Sendable () -> Void = {}

    /// - Parameter resource: the resource attributes to send (the configuration's, plus the worker's own).
    init(configuration: TracingConfiguration, resource: [SpanData.Attribute], metrics: WorkerMetrics, logger: Logger,
         post: (@Sendable ([UInt8]) -> CurlPoster.Outcome)? = nil) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.resource = resource
        if let post {
            self.post = post
        } else {
            let poster = CurlPoster(userAgent: "courier-jobworker/\(CourierVersion.current)")
            let headers = [HTTPHeader(name: "Content-Type", value: "application/x-protobuf")] + configuration.headers
            let (endpoint, timeout) = (configuration.endpoint, configuration.exportTimeout)
            let serial = NSLock()
            self.post = { body in serial.withLock { poster.post(url: endpoint, headers: headers, body: body, timeout: timeout) } }
        }
    }

    private let resource: [SpanData.Attribute]

    /// Queues a finished span for export, or drops and counts it when the queue is full. Never waits.
    func append(_ span: SpanData) {
        let (accepted, full) = lock.withLock { () -> (Bool, Bool) in
            guard queue.count < configuration.maxQueueSize else { return (false, false) }
            queue.append(span)
            return (true, queue.count == configuration.maxBatchSize)
        }
        if !accepted { metrics.recordSpansDropped(1) }
        if full { batchFull() }
    }

    /// Spans waiting for export.
    var queued: Int { lock.withLock { queue.count + (retrying?.spans.count ?? 0) } }

    func runOnce(now: ContinuousClock.Instant) -> Duration {
        if let pending = lock.withLock({ () -> (spans: [SpanData], tries: Int)? in
            defer { retrying = nil }
            return retrying
        }) {
            if let wait = export(pending.spans, tries: pending.tries + 1, now: now) { return wait }
        }
        let batch = lock.withLock { () -> [SpanData] in
            // Usually the whole queue is one batch: take the array itself rather than copy it.
            guard queue.count > configuration.maxBatchSize else {
                var taken: [SpanData] = []
                swap(&taken, &queue)
                return taken
            }
            defer { queue.removeFirst(configuration.maxBatchSize) }
            return Array(queue.prefix(configuration.maxBatchSize))
        }
        guard !batch.isEmpty else { return configuration.scheduleDelay }
        if let wait = export(batch, tries: 1, now: now) { return wait }
        return lock.withLock { queue.count >= configuration.maxBatchSize } ? .zero : configuration.scheduleDelay
    }

    /// Exports one batch. Returns how long to wait before trying it again, or nil when it is
    /// done with (exported, or dropped and counted).
    private func export(_ spans: [SpanData], tries: Int, now: ContinuousClock.Instant) -> Duration? {
        let body = OTLPTraceEncoder.encode(spans, resource: resource, scopeName: "courier", scopeVersion: CourierVersion.current)
        let outcome = post(body)
        switch outcome {
        case .status(let status) where (200..<300).contains(status):
            metrics.recordSpansExported(spans.count)
            return nil
        case .status(let status) where [429, 502, 503, 504].contains(status) && tries < configuration.exportAttempts:
            lock.withLock { retrying = (spans, tries) }
            return Self.pause(afterTries: tries)
        case .failed where tries < configuration.exportAttempts:
            lock.withLock { retrying = (spans, tries) }
            return Self.pause(afterTries: tries)
        default:
            metrics.recordSpansDropped(spans.count)
            if lock.withLock({ throttle.allows("export", at: now) }) {
                let detail: String = switch outcome {
                case .status(let status): "HTTP \(status)"
                case .failed(let message): message
                }
                logger.warning("spans could not be exported; dropped", [("spans", spans.count), ("tries", tries),
                                                                         ("endpoint", Redaction.redactURL(configuration.endpoint)),
                                                                         ("error", detail)])
            }
            return nil
        }
    }

    /// The pause before try `tries + 1`: 1 s, 2 s, 4 s, ... at most 30 s.
    static func pause(afterTries tries: Int) -> Duration {
        .seconds(min(30, 1 << min(tries - 1, 5)))
    }

    /// At shutdown: one try for what is queued, in batches, within the export timeout; the rest is dropped and counted.
    func finish() {
        let deadline = ContinuousClock.now + configuration.exportTimeout
        var spans = lock.withLock { () -> [SpanData] in
            defer { queue.removeAll(); retrying = nil }
            return (retrying?.spans ?? []) + queue
        }
        while !spans.isEmpty {
            let batch = Array(spans.prefix(configuration.maxBatchSize))
            spans.removeFirst(batch.count)
            guard ContinuousClock.now < deadline else {
                metrics.recordSpansDropped(batch.count + spans.count)
                return
            }
            _ = export(batch, tries: configuration.exportAttempts, now: ContinuousClock.now)
        }
    }
}
