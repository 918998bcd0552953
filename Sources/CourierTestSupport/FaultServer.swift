import Foundation
import Glibc

/// A loopback HTTP/1.1 server for tests and benchmarks that answers each request
/// according to a programmable ``Behavior`` and records every request it reads.
///
/// It listens on 127.0.0.1 on an ephemeral port, runs one thread per connection with
/// blocking sockets, and supports keep-alive. Behaviours are chosen per path (the
/// request target without its query): first a scripted sequence queued with
/// ``enqueueBehaviors(_:forPath:)``, then the path's behaviour, then the default.
///
///     let server = try FaultServer()
///     server.enqueueBehaviors([.respond(status: 503, headers: [], body: ""),
///                              .respond(status: 503, headers: [], body: "")], forPath: "/hook")
///     // two 503s, then the default JSON 200
public final class FaultServer: @unchecked Sendable {
    /// Largest request head accepted (request line plus headers); larger gets 431.
    public static let maxHeadBytes = 64 * 1024
    /// Largest request body accepted; larger gets 413.
    public static let maxBodyBytes = 64 * 1024 * 1024

    struct State {
        var defaultBehavior: Behavior
        var behaviors: [String: Behavior] = [:]
        var scripted: [String: [Behavior]] = [:]
        var requests: [RecordedRequest] = []
        var spans: [RequestSpan] = []
        var connectionCount = 0
        var openConnections: Set<Int32> = []
        var stopped = false
        var holdsReleased = false
    }

    /// The port the server listens on (127.0.0.1).
    public let port: Int
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    let condition = NSCondition()
    var state: State
    private let listenFD: Int32
    private let acceptDone = DispatchSemaphore(value: 0)

    /// Starts listening on 127.0.0.1 on a free port.
    /// - Parameter defaultBehavior: how paths without their own behaviour are answered.
    /// - Throws: ``FaultServerError`` if the socket cannot be set up.
    public init(defaultBehavior: Behavior = .json200) throws {
        state = State(defaultBehavior: defaultBehavior)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FaultServerError(step: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let code = errno
            close(fd)
            throw FaultServerError(step: "bind/listen", errno: code)
        }
        guard let port = Self.localPort(of: fd) else {
            let code = errno
            close(fd)
            throw FaultServerError(step: "getsockname", errno: code)
        }
        self.listenFD = fd
        self.port = port
        let thread = Thread { [self] in
            acceptLoop()
            acceptDone.signal()
        }
        thread.name = "fault-server-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    // MARK: - Programming behaviour

    /// Answers every request to `path` (without query) with `behavior`.
    public func setBehavior(_ behavior: Behavior, forPath path: String) {
        withState { $0.behaviors[path] = behavior }
    }

    /// Changes the behaviour for paths that have none of their own.
    public func setDefaultBehavior(_ behavior: Behavior) {
        withState { $0.defaultBehavior = behavior }
    }

    /// Answers the next requests to `path` with `behaviors`, in order; after that
    /// the path's behaviour (or the default) applies again.
    public func enqueueBehaviors(_ behaviors: [Behavior], forPath path: String) {
        withState { $0.scripted[path, default: []].append(contentsOf: behaviors) }
    }

    /// Lets every request held by ``Behavior/holdUntilReleased(then:)`` go on, and any
    /// that arrives later pass straight through.
    public func releaseHolds() {
        withState { $0.holdsReleased = true }
        condition.broadcast()
    }

    // MARK: - Observing

    /// Every request read so far, in arrival order.
    public var requests: [RecordedRequest] {
        withState { $0.requests }
    }

    /// How many requests arrived, for one path (without query) or in total.
    /// Every request's span, in arrival order.
    public var requestSpans: [RequestSpan] { withState { $0.spans } }

    public func requestCount(path: String? = nil) -> Int {
        withState { s in
            guard let path else { return s.requests.count }
            return s.requests.reduce(0) { $0 + ($1.pathWithoutQuery == path ? 1 : 0) }
        }
    }

    /// How many TCP connections were accepted so far.
    public var connectionCount: Int {
        withState { $0.connectionCount }
    }

    /// Waits until at least `count` requests (to `path`, if given) have arrived.
    /// Returns `false` if `timeout` passed first; the timeout only guards against hangs.
    @discardableResult
    public func waitForRequests(_ count: Int, path: String? = nil, timeout: Duration = .seconds(30)) -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        condition.lock()
        defer { condition.unlock() }
        while true {
            let seen = path.map { p in state.requests.reduce(0) { $0 + ($1.pathWithoutQuery == p ? 1 : 0) } }
                ?? state.requests.count
            if seen >= count { return true }
            if state.stopped || !condition.wait(until: deadline) { return false }
        }
    }

    // MARK: - Lifecycle

    /// Stops accepting, closes every connection and ends delayed answers. Idempotent.
    public func stop() {
        // Shut connections down under the lock: a connection thread removes its fd
        // (under the lock) before closing it, so no fd here can have been reused.
        let first = withState { s -> Bool in
            if s.stopped { return false }
            s.stopped = true
            for fd in s.openConnections { shutdown(fd, Int32(SHUT_RDWR)) }
            return true
        }
        condition.broadcast()
        guard first else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        acceptDone.wait()
        close(listenFD)
    }

    /// A loopback URL on which nothing listens: connecting is refused at once.
    /// The port stays reserved (bound, never listening) for the life of the process.
    public static func refusedPortURL() -> String {
        "http://127.0.0.1:\(reservedRefusedPort)"
    }

    private static let reservedRefusedPort: Int = {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = loopbackAddress(port: 0)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return localPort(of: fd) ?? 1   // port 1 is closed on any sane test machine
    }()

    /// CLOCK_MONOTONIC in nanoseconds, the clock of ``RecordedRequest/arrivalNanos``.
    public static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    // MARK: - Internals

    func withState<R>(_ body: (inout State) -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                let code = errno
                if withState({ $0.stopped }) { return }
                if code == EINTR || code == ECONNABORTED { continue }
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    usleep(10_000)
                    continue
                }
                return
            }
            let admitted = withState { s -> Int? in
                if s.stopped { return nil }
                s.connectionCount += 1
                s.openConnections.insert(fd)
                return s.connectionCount
            }
            guard let connectionID = admitted else {
                close(fd)
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var idle = timeval(tv_sec: 120, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
            let thread = Thread { [self] in
                serve(fd: fd, connectionID: connectionID)
                withState { _ = $0.openConnections.remove(fd) }
                close(fd)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    static func localPort(of fd: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return ok == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    static func seconds(_ d: Duration) -> TimeInterval {
        let (s, atto) = d.components
        return TimeInterval(s) + TimeInterval(atto) / 1e18
    }
}

/// Why a ``FaultServer`` could not start.
public struct FaultServerError: Error, CustomStringConvertible {
    /// The socket call that failed.
    public let step: String
    /// The `errno` it left.
    public let errno: Int32

    public var description: String {
        "fault server: \(step) failed: \(String(cString: strerror(errno)))"
    }
}
