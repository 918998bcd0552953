import Foundation

extension FaultServer {
    /// One request's time at the server: from the moment it had been read to the moment
    /// its answer was written (or the connection given up), on CLOCK_MONOTONIC.
    public struct Exchange: Sendable, Equatable {
        public var path: String
        public var startNanos: UInt64
        public var endNanos: UInt64
    }

    /// Every finished exchange so far, in the order they ended (the finished
    /// ``requestSpans``, their paths without the query).
    public var exchanges: [Exchange] {
        requestSpans.compactMap { span in
            span.endNanos.map { Exchange(path: String(span.path.prefix { $0 != "?" }), startNanos: span.startNanos, endNanos: $0) }
        }.sorted { ($0.endNanos, $0.startNanos) < ($1.endNanos, $1.startNanos) }
    }

    /// The most exchanges that overlapped at any instant (an end at the same instant as a
    /// start counts as before it).
    public static func peakConcurrency(_ exchanges: [Exchange]) -> Int {
        let events = Self.events(exchanges)
        var current = 0
        var peak = 0
        for (_, delta) in events {
            current += delta
            peak = max(peak, current)
        }
        return peak
    }

    /// The mean number of exchanges in flight over the time at least one was.
    public static func meanConcurrencyWhileBusy(_ exchanges: [Exchange]) -> Double {
        let events = Self.events(exchanges)
        var current = 0
        var last: UInt64 = 0
        var busy: Double = 0
        var weighted: Double = 0
        for (time, delta) in events {
            if current > 0 {
                let span = Double(time - last)
                busy += span
                weighted += span * Double(current)
            }
            current += delta
            last = time
        }
        return busy > 0 ? weighted / busy : 0
    }

    /// Starts (+1) and ends (-1) in time order, an end before a start at the same instant.
    static func events(_ exchanges: [Exchange]) -> [(time: UInt64, delta: Int)] {
        var events: [(time: UInt64, delta: Int)] = []
        for exchange in exchanges {
            events.append((exchange.startNanos, 1))
            events.append((exchange.endNanos, -1))
        }
        events.sort { (a: (time: UInt64, delta: Int), b: (time: UInt64, delta: Int)) -> Bool in
            a.time != b.time ? a.time < b.time : a.delta < b.delta
        }
        return events
    }

    /// The most request starts (arrivals) within any window of `window` nanoseconds.
    public static func maxStartsInWindow(_ starts: [UInt64], window: UInt64) -> Int {
        let sorted = starts.sorted()
        var best = 0
        var low = 0
        for high in sorted.indices {
            while sorted[high] - sorted[low] >= window { low += 1 }
            best = max(best, high - low + 1)
        }
        return best
    }
}
