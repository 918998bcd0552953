import CourierStore
import CourierTestSupport
@testable import CourierWorker
import Foundation
import Testing

/// The worker's services as a declared graph: its print, its soundness, and the wiring
/// that turns any graph into threads and wake-ups.
@Suite struct ServiceGraphTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let updating = ProcessInfo.processInfo.environment["COURIER_UPDATE_GOLDEN"] == "1"

    /// A worker that never reaches a database: building its graph opens no connection.
    static func worker(_ change: (inout WorkerConfiguration) -> Void = { _ in }) -> Worker {
        var configuration = WorkerConfiguration(database: DatabaseConfiguration(connectionString: "host=127.0.0.1 port=1 dbname=none"))
        change(&configuration)
        return Worker(configuration: configuration, httpHandler: NoopJobHandler(), logger: Logger(level: .error, sink: { _ in }))
    }

    /// The worker's graph, compared with `Golden/service-graph.txt`. Run
    /// `COURIER_UPDATE_GOLDEN=1 swift test --filter ServiceGraphTests` to rewrite it after an
    /// intended change, and review the diff.
    @Test func theWorkersGraphMatchesGoldenFile() throws {
        let text = Self.worker().serviceGraph.description
        let file = Self.directory.appendingPathComponent("service-graph.txt")
        if Self.updating {
            try (text + "\n").write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let golden = try String(contentsOf: file, encoding: .utf8)
        #expect(text + "\n" == golden, "the service graph differs from Golden/service-graph.txt; run with COURIER_UPDATE_GOLDEN=1 and review the diff")
    }

    /// A worker that exports spans (issue 44) runs the exporter first, so it stops last:
    /// `Golden/service-graph-tracing.txt`, rewritten the same way.
    @Test func aTracingWorkersGraphMatchesGoldenFile() throws {
        let text = Self.worker { $0.tracing = TracingConfiguration(endpoint: "http://127.0.0.1:1/v1/traces") }.serviceGraph.description
        let file = Self.directory.appendingPathComponent("service-graph-tracing.txt")
        if Self.updating {
            try (text + "\n").write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let golden = try String(contentsOf: file, encoding: .utf8)
        #expect(text + "\n" == golden, "the service graph differs from Golden/service-graph-tracing.txt; run with COURIER_UPDATE_GOLDEN=1 and review the diff")
    }

    /// Every edge reaches a service in the graph, every service has a thread, started in
    /// the graph's order and stopped in reverse, and claiming (started last) ends first.
    @Test func theWorkersGraphIsSound() {
        for scheduler in [true, false] {
            let worker = Self.worker { $0.scheduler.enabled = scheduler }
            let graph = worker.serviceGraph!
            #expect(graph.problems == [])
            #expect(worker.services.all.map(\.service.name) == graph.nodes.map(\.name))
            #expect(zip(worker.services.all, graph.nodes).allSatisfy { $0.service === $1.service })
            #expect(graph.stopOrder.map(\.name) == graph.nodes.map(\.name).reversed())
            #expect(graph.nodes.last?.service === worker.claimer)
            // Six threads, each on a connection of its own (WorkerConnectionBudgetTests counts them).
            #expect(graph.nodes.count == 6)
            let housekeeping = graph.nodes.flatMap(\.members).map(\.name)
            #expect(housekeeping.contains("courier-scheduler") == scheduler)
            #expect(graph.nodes.filter { !$0.needsSchema }.map(\.name) == ["courier-listen", "courier-claim"])
        }
    }

    /// The checks find what is wrong: an edge to nothing, from nothing, two of one name.
    @Test func problemsNameEdgesToNothingAndDuplicates() {
        var graph = ServiceGraph()
        let a = Recording("a", log: Log()), b = Recording("b", log: Log())
        graph.nodes = [.init(a, gate: StopGate()), .init(ServiceBundle(name: "a", members: [b], clock: { .now }), gate: StopGate())]
        let fromA = ServiceGraph.Event(source: "a", name: "ping", install: { _ in })
        let fromNowhere = ServiceGraph.Event(source: "ghost", name: "ping", install: { _ in })
        graph.edges = [.init(fromA, wakes: .service("c")), .init(fromNowhere, wakes: .service("b")),
                       .init(fromA, wakes: .service("b"), tell: {})]
        #expect(graph.problems == [
            "two services named a",
            "a ping wakes c, which is not in the graph",
            "ghost ping comes from a service not in the graph",
            "a ping tells b something unnamed",
        ])
    }

    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String] = []
        func append(_ entry: String) { lock.withLock { entries.append(entry) } }
        var all: [String] { lock.withLock { entries } }
    }

    /// A service that records its rounds and its finish, and can announce one event.
    final class Recording: WorkerService, @unchecked Sendable {
        let name: String
        let log: Log
        private let lock = NSLock()
        private var rounds = 0
        var ping: @Sendable () -> Void = {}
        init(_ name: String, log: Log) {
            self.name = name
            self.log = log
        }
        var roundCount: Int { lock.withLock { rounds } }
        func runOnce(now: ContinuousClock.Instant) -> Duration {
            lock.withLock { rounds += 1 }
            return .seconds(3600)
        }
        func finish() { log.append("finish \(name)") }
    }

    /// The wiring: an event wakes its targets (a node's thread, a bundle member alone) after
    /// telling them; every node is started, and stopped in reverse, each finished before the next.
    @Test func wiringWakesTheTargetsAndStopsInReverse() async {
        let log = Log()
        let first = Recording("first", log: log), second = Recording("second", log: log), last = Recording("last", log: log)
        let member = Recording("member", log: log), other = Recording("other", log: log)
        let bundle = ServiceBundle(name: "bundle", members: [member, other], clock: { .now })
        var graph = ServiceGraph()
        graph.nodes = [.init(first, gate: StopGate()), .init(bundle, gate: StopGate()), .init(second, gate: StopGate()),
                       .init(last, gate: StopGate(), needsSchema: false)]
        let told = Log()
        let firstPings = ServiceGraph.Event(source: "first", name: "ping", install: { first.ping = $0 })
        graph.edges = [
            .init(firstPings, wakes: .service("last"), told: ["note"], tell: { told.append("last told") }),
            .init(firstPings, wakes: .service("member")),
            .init(ServiceGraph.Event(source: "last", name: "ping", install: { last.ping = $0 }), wakes: .everyService),
        ]
        #expect(graph.problems == [])
        let schemaReady = SchemaFlag()
        let threads = graph.wire(clock: { .now }, schemaReady: { schemaReady.value })
        #expect(threads.all.map(\.service.name) == ["first", "bundle", "second", "last"])
        threads.startAll()
        // Only the node that needs no schema runs until the schema is ready; then every node
        // runs once (each waits an hour after a round, so only a wake-up brings another).
        #expect(await eventually(every: .milliseconds(5)) { last.roundCount == 1 })
        #expect(first.roundCount == 0 && member.roundCount == 0)
        schemaReady.value = true
        #expect(await eventually(every: .milliseconds(5)) { first.roundCount == 1 && second.roundCount == 1 && member.roundCount == 1 && other.roundCount == 1 })
        // "last" pings: every node's thread is woken (the bundle's too, whose members are not due).
        last.ping()
        #expect(await eventually(every: .milliseconds(5)) { first.roundCount == 2 && second.roundCount == 2 && last.roundCount == 2 })
        // "first" pings: "last" is told, then woken; the bundle runs "member" alone.
        first.ping()
        #expect(await eventually(every: .milliseconds(5)) { last.roundCount == 3 && member.roundCount == 2 })
        #expect(told.all == ["last told"])
        #expect(other.roundCount == 1 && second.roundCount == 2 && first.roundCount == 2)
        threads.stop(threads.all)
        #expect(log.all == ["finish last", "finish second", "finish other", "finish member", "finish first"])
    }
}

/// Whether the test's schema is ready, behind a lock.
private final class SchemaFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var ready = false
    var value: Bool {
        get { lock.withLock { ready } }
        set { lock.withLock { ready = newValue } }
    }
}
