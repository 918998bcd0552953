import CourierCore
import CourierStore
import Foundation

/// Samples fleet-wide figures (queue depth, breakers, dead letters, live workers)
/// from the database for `/metrics`, on its own thread and its own connection,
/// at most once per interval. Requests never wait for the database: they read the
/// last sample, and its age is exported so a stale sample is visible.
///
/// The fleet-wide figures count whole tables (every job, every breaker), so they are read
/// only where they are exported: on the fleet reporter. The other workers read who the
/// reporter is and nothing else. And a sample that takes long spaces the next one out
/// (``delay(afterSampleTook:interval:)``), so sampling never keeps PostgreSQL busy more than
/// a twentieth of the time, however big the tables grow.
public final class MetricsServerSampler: @unchecked Sendable {
    /// One reading of the database.
    public struct Sample: Sendable {
        public var takenAt: Date
        public var queueDepths: [StatsQueries.QueueDepth]
        /// Dead letters not yet replayed, by reason.
        public var deadLetters: [String: Int]
        /// Breakers per state.
        public var breakerStates: [String: Int]
        /// Breakers that are not closed, with how long they have been in their state.
        public var openBreakers: [OpenBreaker]
        /// Breaker transitions since the schema was created (`courier.breaker_transition_totals`), by from and to state.
        public var breakerTransitions: [Transition]
        /// Workers with a recent heartbeat that are not shutting down.
        public var liveWorkers: Int
        /// The worker that exports the fleet-wide families (lower-case UUID), if any is live.
        public var fleetReporter: String? = nil
    }

    public typealias OpenBreaker = StatsQueries.OpenBreaker
    public typealias Transition = StatsQueries.BreakerTransitionCount

    /// The latest sample and how sampling has gone.
    public struct Status: Sendable {
        public var latest: Sample?
        public var successes = 0
        public var failures = 0
    }

    /// The most breakers exported one by one (the rest are only counted per state).
    static let openBreakerLimit = 200

    /// Sampling keeps the database busy at most one part in this many (see ``delay(afterSampleTook:interval:)``).
    static let busyShareLimit = 20

    private let database: DatabaseConfiguration
    private let interval: Duration
    /// This worker's id (lower-case UUID), to tell whether it is the fleet reporter.
    private let workerID: String?
    private let logger: Logger
    private let lock = NSLock()
    private var current = Status()
    private var stopping = false
    private var started = false
    private let wake = ThreadSignal()
    private let finished = DispatchSemaphore(value: 0)

    /// Queues whose depth reads 0 rather than vanishing when they hold no job: the ones
    /// this worker serves and every one seen in an earlier sample.
    private var knownQueues: Set<String>

    /// - Parameters:
    ///   - interval: the time between samples. Default 5 s.
    ///   - servedQueues: the worker's queues, exported with depth 0 while empty.
    ///   - workerID: this worker's id; while another live worker is the fleet reporter, only
    ///     that is read. Nil: always read everything.
    public init(database: DatabaseConfiguration, interval: Duration = .seconds(5), logger: Logger, servedQueues: [String] = [],
                workerID: UUID? = nil) {
        knownQueues = Set(servedQueues)
        self.workerID = workerID?.uuidString.lowercased()
        var configuration = database
        configuration.applicationName = "courier-metrics"
        self.database = configuration
        self.interval = interval
        self.logger = logger
    }

    public var status: Status { lock.withLock { current } }

    /// Starts the sampling thread; the first sample is taken at once.
    public func start() {
        guard lock.withLock({ () -> Bool in defer { started = true }; return !started }) else { return }
        let thread = Thread { [self] in
            loop()
            finished.signal()
        }
        thread.name = "courier-metrics-sampler"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Stops sampling. Waits a little for a query in progress; never longer than 5 s.
    public func stop() {
        let wasStarted = lock.withLock { () -> Bool in
            defer { stopping = true }
            return started && !stopping
        }
        guard wasStarted else { return }
        wake.signal()
        _ = finished.wait(timeout: .now() + 5)
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func loop() {
        // A sample must never hang behind a lock for long.
        let session = StoreSession(configuration: database, statementTimeout: .seconds(10), pause: { _ in })
        defer { session.close() }
        var failing = false
        let clock = ContinuousClock()
        while !isStopping {
            let began = clock.now
            let result = session.run { try Self.sample(from: $0, workerID: self.workerID) }
            let took = clock.now - began
            switch result {
            case .success(var sample):
                if Self.exportsFleet(reporter: sample.fleetReporter, workerID: workerID) {
                    sample.queueDepths = Self.zeroFilled(sample.queueDepths, known: &knownQueues)
                }
                lock.withLock {
                    current.latest = sample
                    current.successes += 1
                }
                if failing {
                    failing = false
                    logger.info("metrics sampling works again")
                }
            case .failure(let error):
                lock.withLock { current.failures += 1 }
                if !failing {
                    failing = true
                    logger.warning("metrics sampling failed; serving the last sample", [("error", error.description)])
                }
            }
            wake.wait(timeout: Self.delay(afterSampleTook: took, interval: interval))
        }
    }

    /// The wait before the next sample: `interval`, or longer when the last sample took more
    /// than a ``busyShareLimit``th of it (a queue of millions counts for seconds), so the
    /// sampler is busy at most that share of the time. Pure, for tests.
    static func delay(afterSampleTook took: Duration, interval: Duration) -> Duration {
        max(interval, took * busyShareLimit)
    }

    /// `depths` with a 0 for each state of every known queue that has no row, so a queue's
    /// series read 0 when it empties instead of vanishing; `known` grows by the queues seen.
    static func zeroFilled(_ depths: [StatsQueries.QueueDepth], known: inout Set<String>) -> [StatsQueries.QueueDepth] {
        known.formUnion(depths.map(\.queue))
        var result = depths
        for queue in known.sorted() {
            for state in JobState.allCases.map(\.rawValue) where !depths.contains(where: { $0.queue == queue && $0.state == state }) {
                result.append(StatsQueries.QueueDepth(queue: queue, state: state, count: 0, oldestDueSeconds: nil))
            }
        }
        return result.sorted { ($0.queue, $0.state) < ($1.queue, $1.state) }
    }

    /// Whether the worker `workerID` exports the fleet-wide families when `reporter` is the
    /// fleet reporter: when it is the reporter, or when no reporter (or no id) is known.
    static func exportsFleet(reporter: String?, workerID: String?) -> Bool {
        guard let reporter, let workerID else { return true }
        return reporter == workerID
    }

    /// Reads one sample. The statements are read-only. When another live worker than
    /// `workerID` is the fleet reporter, the fleet-wide figures are left empty, not read:
    /// this worker exports them without samples (`PrometheusText.workerPage`).
    static func sample(from store: any WorkerStore, workerID: String? = nil) throws -> Sample {
        let reporter = try store.statsFleetReporter()?.uuidString.lowercased()
        if !exportsFleet(reporter: reporter, workerID: workerID) {
            return Sample(takenAt: Date(), queueDepths: [], deadLetters: [:], breakerStates: [:], openBreakers: [],
                          breakerTransitions: [], liveWorkers: 0, fleetReporter: reporter)
        }
        return Sample(takenAt: Date(), queueDepths: try store.statsQueueDepths(), deadLetters: try store.statsDeadLetterCounts(),
                      breakerStates: try store.statsBreakerStates(), openBreakers: try store.statsOpenBreakers(limit: openBreakerLimit),
                      breakerTransitions: try store.statsBreakerTransitionCounts(), liveWorkers: try store.statsLiveWorkerCount(),
                      fleetReporter: reporter)
    }
}
