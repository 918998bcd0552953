import Foundation
import Postgres

/// Fleet-wide attempt counters (`courier.attempt_stats`), bucketed per minute.
public enum AttemptStatsTable {
    /// Upper bounds, in seconds, of the retry-delay histogram; a last bucket holds the rest.
    public static let delayBounds: [Double] = [1, 5, 15, 60, 300, 900, 3600]

    /// One worker's counts for one (queue, destination, class) since its last flush.
    public struct Counts: Sendable, Equatable {
        public var attempts = 0
        public var retries = 0
        public var succeededAfterRetry = 0
        public var delayBuckets = [Int](repeating: 0, count: AttemptStatsTable.delayBounds.count + 1)
        public var delayMillisecondsSum: Int64 = 0
        public init() {}

        public mutating func addRetry(delayMilliseconds: Int64) {
            retries += 1
            delayMillisecondsSum += delayMilliseconds
            let seconds = Double(delayMilliseconds) / 1000
            delayBuckets[AttemptStatsTable.delayBounds.firstIndex { seconds <= $0 } ?? AttemptStatsTable.delayBounds.count] += 1
        }
    }

    public struct Key: Sendable, Hashable {
        public var queue: String
        public var destination: String
        public var errorClass: String
        public init(queue: String, destination: String, errorClass: String) {
            self.queue = queue
            self.destination = destination
            self.errorClass = errorClass
        }
    }

    /// Adds a worker's counts to the current minute's rows, in one statement.
    public static func add(_ counts: [Key: Counts], on connection: PostgresConnection) throws {
        guard !counts.isEmpty else { return }
        // Rows are upserted in one order, whoever flushes: two workers' overlapping flushes
        // then wait for each other instead of deadlocking (a dictionary's order is random).
        let entries = counts.sorted { ($0.key.queue, $0.key.destination, $0.key.errorClass) < ($1.key.queue, $1.key.destination, $1.key.errorClass) }
        try connection.query("""
            select courier.attempt_stats_add(\(entries.map(\.key.queue)), \(entries.map(\.key.destination)),
                \(entries.map(\.key.errorClass)), \(entries.map { Int64($0.value.attempts) }), \(entries.map { Int64($0.value.retries) }),
                \(entries.map { Int64($0.value.succeededAfterRetry) }),
                \(entries.map { "{" + $0.value.delayBuckets.map(String.init).joined(separator: ",") + "}" }),
                \(entries.map(\.value.delayMillisecondsSum)))
            """)
    }

    /// Deletes buckets older than two days.
    @discardableResult
    public static func prune(on connection: PostgresConnection) throws -> Int {
        try connection.execute("delete from courier.attempt_stats where bucket < now() - interval '2 days'")
    }

    /// Totals over a period, for one group (a queue or a destination).
    public struct Summary: Sendable, Equatable, Encodable {
        public var group: String
        public var attemptsByClass: [String: Int]
        public var retries: Int
        public var succeeded: Int
        public var succeededAfterRetry: Int
        /// Cumulative counts of retry delays at or below each bound (seconds; the last is +Inf).
        public var retryDelayHistogram: [String: Int]
        public var retryDelayMeanSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case group, attemptsByClass = "attempts_by_class", retries, succeeded
            case succeededAfterRetry = "succeeded_after_retry", retryDelayHistogram = "retry_delay_histogram"
            case retryDelayMeanSeconds = "retry_delay_mean_seconds"
        }
    }

    public enum Grouping: String, Sendable { case queue, destination }

    /// Totals for the last `seconds`, grouped by queue or destination.
    public static func summaries(lastSeconds seconds: Int, by grouping: Grouping,
                                 on connection: PostgresConnection) throws -> [Summary] {
        let column = grouping == .queue ? "queue" : "destination"
        let sql = """
            select \(column), class, sum(attempts)::bigint, sum(retries)::bigint, sum(succeeded_after_retry)::bigint,
                   sum(delay_ms_sum)::bigint,
                   array(select sum(b)::bigint from courier.attempt_stats s2, unnest(s2.delay_buckets) with ordinality as u(b, i)
                         where s2.bucket >= now() - $1 * interval '1 second' and s2.\(column) = s.\(column) and s2.class = s.class
                         group by i order by i)
            from courier.attempt_stats s
            where bucket >= now() - $1 * interval '1 second'
            group by \(column), class
            order by \(column), class
            """
        var byGroup: [String: (classes: [String: Int], retries: Int, success: Int, afterRetry: Int, delaySum: Int64, buckets: [Int])] = [:]
        for row in try connection.query(PostgresQuery(unsafeSQL: sql, binds: [seconds])).rows {
            let group = try row.decode(0, as: String.self)
            let errorClass = try row.decode(1, as: String.self)
            let attempts = try row.decode(2, as: Int.self)
            var entry = byGroup[group] ?? ([:], 0, 0, 0, 0, [Int](repeating: 0, count: delayBounds.count + 1))
            entry.classes[errorClass, default: 0] += attempts
            if errorClass == "success" { entry.success += attempts }
            entry.retries += try row.decode(3, as: Int.self)
            entry.afterRetry += try row.decode(4, as: Int.self)
            entry.delaySum += try row.decode(5, as: Int64.self)
            let buckets = try row.decode(6, as: [Int64].self)
            for (index, count) in buckets.enumerated() where index < entry.buckets.count { entry.buckets[index] += Int(count) }
            byGroup[group] = entry
        }
        return byGroup.keys.sorted().map { group in
            let e = byGroup[group]!
            var histogram: [String: Int] = [:]
            var cumulative = 0
            for (index, count) in e.buckets.enumerated() {
                cumulative += count
                let label = index < delayBounds.count ? "le_\(Int(delayBounds[index]))s" : "le_inf"
                histogram[label] = cumulative
            }
            return Summary(group: group, attemptsByClass: e.classes, retries: e.retries, succeeded: e.success,
                           succeededAfterRetry: e.afterRetry, retryDelayHistogram: histogram,
                           retryDelayMeanSeconds: e.retries > 0 ? Double(e.delaySum) / Double(e.retries) / 1000 : nil)
        }
    }
}
