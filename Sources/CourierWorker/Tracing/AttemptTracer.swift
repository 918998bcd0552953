import CourierCore
import CourierStore
import Foundation

/// A worker's tracing: the pure ``AttemptSpans`` rules, the source of span and trace ids,
/// and the ``SpanExporter`` the recorded spans go to. Exists only when tracing is configured;
/// a worker without it builds no span.
final class AttemptTracer: Sendable {
    let spans: AttemptSpans
    let exporter: SpanExporter
    private let ids: Locked<any RandomNumberGenerator>

    /// - Parameter ids: the source of trace and span ids. By default a SplitMix64 seeded once from
    ///   the system's generator: ids must be unique and unpredictable enough for tracing, not
    ///   secret, and a `getrandom` call per id was three system calls per job.
    init(spans: AttemptSpans, exporter: SpanExporter,
         ids: any RandomNumberGenerator = SplitMix64(seed: { var system = SystemRandomNumberGenerator(); return system.next() }())) {
        self.spans = spans
        self.exporter = exporter
        self.ids = Locked(ids)
    }

    func start(_ job: ClaimedJob, now: Date) -> AttemptSpans.Started {
        ids.withLock { generator in
            var ids = AnyGenerator(base: generator)
            defer { generator = ids.base }
            return spans.start(job, now: now, ids: &ids)
        }
    }

    /// Builds the finished span and queues it for export when it is recorded.
    func finish(_ started: AttemptSpans.Started, job: ClaimedJob, classification: Classification, end: AttemptSpans.End,
                now: Date) {
        guard started.isRecorded else { return }
        exporter.append(spans.finish(started, job: job, classification: classification, end: end, now: now))
    }

    private struct AnyGenerator: RandomNumberGenerator {
        var base: any RandomNumberGenerator
        mutating func next() -> UInt64 { base.next() }
    }
}

/// The destinations whose requests carry trace context (`propagate_trace`), as last read by
/// the settings refresher. A sub-key `scheme://host:port/...` propagates when it or its origin opted in.
final class TracePropagation: Sendable {
    private let destinations = Locked(Set<String>())

    func update(_ fresh: [String]) { destinations.withLock { $0 = Set(fresh) } }

    func propagates(_ destination: String) -> Bool {
        destinations.withLock { set in
            guard !set.isEmpty else { return false }
            if set.contains(destination) { return true }
            return Self.origin(of: destination).map(set.contains) ?? false
        }
    }

    /// `scheme://host:port` of a sub-key `scheme://host:port/rest`; nil for anything else.
    static func origin(of destination: String) -> String? {
        guard let schemeEnd = destination.range(of: "://") else { return nil }
        guard let slash = destination[schemeEnd.upperBound...].firstIndex(of: "/") else { return nil }
        return String(destination[..<slash])
    }
}
