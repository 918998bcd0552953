import Foundation

/// A worker's services and who wakes whom, as data: the nodes (each a thread of its own,
/// in start order) and the wake edges ("A's event X wakes B"). `Worker.makeServiceGraph()`
/// declares the worker's graph in one place; ``wire(clock:schemaReady:)`` turns any graph
/// into threads and installed wake-ups, and ``description`` prints it (the golden test
/// `Golden/service-graph.txt` holds the worker's).
///
/// The graph decides no behaviour of its own: it only says which thread runs which service,
/// whether that thread waits for the schema, and which event hooks wake which threads.
struct ServiceGraph {
    /// One thread of the worker: a service (or a ``ServiceBundle`` of light ones), the stop
    /// gate its store session pauses on, and whether it waits for the schema.
    struct Node {
        let service: any WorkerService
        let gate: StopGate
        /// Whether the thread waits until the schema is complete before its first round
        /// (every service but the claimer, which checks the schema, and the listener).
        let needsSchema: Bool

        init(_ service: any WorkerService, gate: StopGate, needsSchema: Bool = true) {
            self.service = service
            self.gate = gate
            self.needsSchema = needsSchema
        }

        /// The thread's name (the service's).
        var name: String { service.name }
        /// The bundle's members, in run order; empty for a service of its own.
        var members: [any WorkerService] { (service as? ServiceBundle)?.members ?? [] }
    }

    /// An event a service (or the worker itself, as `worker`) announces through a hook.
    struct Event {
        /// The announcing service's name, or `worker`.
        let source: String
        /// What happened, as the print names it.
        let name: String
        /// Sets the hook the source calls on the event; the graph installs one closure per event.
        let install: (@escaping @Sendable () -> Void) -> Void
    }

    /// What an edge wakes.
    enum Target: Equatable, CustomStringConvertible {
        /// The node of that name, or the bundle member of that name (woken alone, at the bundle's next round).
        case service(String)
        /// Every node, in start order.
        case everyService

        var description: String {
            switch self {
            case .service(let name): name
            case .everyService: "every service"
            }
        }
    }

    /// "`event` wakes `target`": the target is first told (`tell`, named `told` in the print),
    /// then its thread is woken.
    struct Edge {
        let event: Event
        let target: Target
        /// What the target is told before it is woken (for example that jobs arrived), by name.
        let told: [String]
        let tell: (@Sendable () -> Void)?

        init(_ event: Event, wakes target: Target, told: [String] = [], tell: (@Sendable () -> Void)? = nil) {
            self.event = event
            self.target = target
            self.told = told
            self.tell = tell
        }
    }

    /// The nodes, in start order; they stop in reverse.
    var nodes: [Node] = []
    var edges: [Edge] = []

    /// The nodes in the order they stop: the reverse of the start order.
    var stopOrder: [Node] { nodes.reversed() }

    /// What is wrong with the graph: two nodes or members of one name, an edge to a service
    /// not in the graph, an edge from a source not in it, an edge whose hook is told but not named.
    var problems: [String] {
        var problems: [String] = []
        var names: [String] = []
        for node in nodes { names.append(node.name); names.append(contentsOf: node.members.map(\.name)) }
        let duplicated = Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        problems += duplicated.map { "two services named \($0)" }
        for edge in edges {
            if case .service(let name) = edge.target, !names.contains(name) {
                problems.append("\(edge.event.source) \(edge.event.name) wakes \(name), which is not in the graph")
            }
            if edge.event.source != Self.workerSource && !names.contains(edge.event.source) {
                problems.append("\(edge.event.source) \(edge.event.name) comes from a service not in the graph")
            }
            if edge.tell != nil && edge.told.isEmpty {
                problems.append("\(edge.event.source) \(edge.event.name) tells \(edge.target) something unnamed")
            }
        }
        return problems
    }

    /// The source name of events the worker itself announces (a job finished, a renewal succeeded, a shutdown began).
    static let workerSource = "worker"

    /// Makes one thread per node, in start order (none started), and installs for every event
    /// one closure that tells and wakes its edges' targets in the order the edges are listed.
    /// A node that `needsSchema` runs only once `schemaReady()` holds. The closures hold the
    /// threads weakly, so a graph never keeps its services alive.
    func wire(clock: @escaping @Sendable () -> ContinuousClock.Instant,
              schemaReady: @escaping @Sendable () -> Bool) -> ServiceThreads {
        var threads: [ServiceThread] = []
        for node in nodes {
            let always: @Sendable () -> Bool = { true }
            threads.append(ServiceThread(node.service, gate: node.gate, clock: clock, ready: node.needsSchema ? schemaReady : always))
        }
        for (node, thread) in zip(nodes, threads) {
            if let bundle = node.service as? ServiceBundle {
                bundle.wakeThread = { [weak thread] in thread?.wake() }
            }
        }
        func wake(_ name: String) -> @Sendable () -> Void {
            for (node, thread) in zip(nodes, threads) {
                if node.name == name { return { [weak thread] in thread?.wake() } }
                if let bundle = node.service as? ServiceBundle, let member = bundle.members.first(where: { $0.name == name }) {
                    return { [weak bundle, weak member] in if let member { bundle?.wake(member) } }
                }
            }
            preconditionFailure("the service graph has no service named \(name)")
        }
        let wakeAll: @Sendable () -> Void = { [threads = threads.map { WeakThread($0) }] in threads.forEach { $0.thread?.wake() } }
        // One closure per event, in the order the events first appear.
        var order: [String] = []
        var byEvent: [String: (event: Event, steps: [@Sendable () -> Void])] = [:]
        for edge in edges {
            let key = "\(edge.event.source)\u{0}\(edge.event.name)"
            if byEvent[key] == nil { order.append(key); byEvent[key] = (edge.event, []) }
            let wakeTarget: @Sendable () -> Void
            switch edge.target {
            case .service(let name): wakeTarget = wake(name)
            case .everyService: wakeTarget = wakeAll
            }
            if let tell = edge.tell { byEvent[key]!.steps.append(tell) }
            byEvent[key]!.steps.append(wakeTarget)
        }
        for key in order {
            let (event, steps) = byEvent[key]!
            let announce: @Sendable () -> Void
            if steps.count == 1 {
                announce = steps[0]
            } else {
                announce = { for step in steps { step() } }
            }
            event.install(announce)
        }
        return ServiceThreads(threads)
    }

    /// A weak reference to a thread, for closures that must not keep it alive.
    private struct WeakThread: @unchecked Sendable {
        weak var thread: ServiceThread?
        init(_ thread: ServiceThread) { self.thread = thread }
    }
}

extension ServiceGraph: CustomStringConvertible {
    /// The graph as text, stable from run to run: the nodes in start order (the bundle's
    /// members beneath it), the stop order, then the wake edges in declaration order.
    var description: String {
        var lines = ["services, in start order (one thread each):"]
        for node in nodes {
            lines.append("  \(node.name)" + (node.needsSchema ? " (waits for the schema)" : ""))
            for member in node.members { lines.append("    \(member.name)") }
        }
        lines.append("stop order: " + stopOrder.map(\.name).joined(separator: ", "))
        lines.append("wake edges:")
        for edge in edges {
            let told = edge.told.isEmpty ? "" : ", told first: " + edge.told.joined(separator: ", ")
            lines.append("  \(edge.event.source) \(edge.event.name) -> \(edge.target)\(told)")
        }
        return lines.joined(separator: "\n")
    }
}

/// The threads of a wired ``ServiceGraph``, in start order.
final class ServiceThreads: @unchecked Sendable {
    let all: [ServiceThread]

    init(_ threads: [ServiceThread]) { all = threads }

    /// The thread of the node named `name`.
    subscript(name: String) -> ServiceThread {
        guard let thread = all.first(where: { $0.service.name == name }) else {
            preconditionFailure("no service thread named \(name)")
        }
        return thread
    }

    /// Starts every thread, in order.
    func startAll() { all.forEach { $0.start() } }

    /// Stops `threads` in reverse order, each finished before the next is stopped.
    func stop(_ threads: [ServiceThread]) {
        for thread in threads.reversed() {
            thread.requestStop()
            thread.join()
        }
    }
}
