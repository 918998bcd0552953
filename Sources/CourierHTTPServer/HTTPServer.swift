import CourierCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on BSD sockets: the worker's `/metrics`, `/healthz` and
/// `/readyz`, and whatever else routes a ``HTTPRouter`` declares.
///
/// One thread multiplexes every connection with `poll`, so slow or stuck clients
/// hold no thread and cannot delay the others. It stays up against bad clients:
/// the request head must arrive within ``Limits/requestTimeout`` (else 408), be at
/// most ``Limits/maxHeaderBytes`` (else 431) and be well formed (else 400); every
/// response ends the connection (`Connection: close`). Writes never raise SIGPIPE.
///
/// Against connection floods (slowloris): ``Limits/maxConnections`` connections are
/// held for any request, and ``Limits/reservedConnections`` more only for routes
/// marked as probes (`/healthz`, `/readyz`), so a flood of idle connections cannot
/// make a liveness probe fail. When every slot is taken, a new connection evicts the
/// oldest one that has not completed a request (it has had the longest to do so), so
/// idle connections can delay nobody; one that completes an ordinary request in a
/// reserved slot evicts such a connection from an ordinary slot, or gets 503.
///
/// Handlers run on the server thread and must be quick and never block on I/O:
/// they should only read values already in memory. A route marked ``HTTPRoute/blocking``
/// (one that queries a database) runs instead on one of ``Limits/handlerThreads``
/// handler threads; its connection waits without holding the server thread, and is
/// answered 503 when the handler takes longer than ``Limits/handlerTimeout``.
public final class HTTPServer: @unchecked Sendable {
    /// Limits that protect the server from slow and malformed clients.
    public struct Limits: Sendable {
        /// The whole request head must arrive within this (there is no keep-alive, so
        /// this is also how long an idle connection lives). Default 2 s.
        public var requestTimeout: Duration = .seconds(2)
        /// Sending a response must finish within this. Default 10 s.
        public var writeTimeout: Duration = .seconds(10)
        /// The largest request head accepted. Default 8 KiB.
        public var maxHeaderBytes = 8192
        /// Connections held at once for any request. Default 64.
        public var maxConnections = 64
        /// Further connections held only for probe routes (see ``HTTPRoute/isProbe``). Default 8.
        public var reservedConnections = 8
        /// The largest request body accepted (413 above it). Default 0: bodies are not read.
        /// The whole request, body included, must arrive within ``requestTimeout``.
        public var maxBodyBytes = 0
        /// Threads that run blocking routes. Default 4.
        public var handlerThreads = 4
        /// A blocking route must answer within this, else 503. Default 30 s.
        public var handlerTimeout: Duration = .seconds(30)

        public init() {}
    }

    /// Answers one request; runs on the server thread.
    public typealias Handler = @Sendable (Request) -> Response

    public let address: HTTPServerAddress
    public let limits: Limits
    private let handler: Handler
    private let isProbe: @Sendable (Request) -> Bool
    private let isBlocking: @Sendable (Request) -> Bool
    /// Runs blocking routes; started with the server when any route may block.
    private let handlerPool: HandlerPool?
    /// Answers from the handler threads, by connection serial, waiting for the server thread.
    private var answered: [(serial: UInt64, response: Response)] = []

    private let lock = NSLock()
    private var listener: Int32 = -1
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1
    private var bound: HTTPServerAddress?
    private var started = false
    private var stopping = false
    private var stopHooks: [@Sendable () -> Void] = []
    private let finished = DispatchSemaphore(value: 0)

    /// A server whose every request goes to `handler`; no request counts as a probe.
    public init(address: HTTPServerAddress, limits: Limits = Limits(), handler: @escaping Handler) {
        self.address = address
        self.limits = limits
        self.handler = handler
        self.isProbe = { _ in false }
        self.isBlocking = { _ in false }
        self.handlerPool = nil
    }

    /// A server answering with `router`'s routes; its probe routes may use the reserved slots.
    public init(address: HTTPServerAddress, limits: Limits = Limits(), router: HTTPRouter) {
        self.address = address
        self.limits = limits
        self.handler = { router.respond(to: $0) }
        self.isProbe = { router.isProbe($0) }
        self.isBlocking = { router.route(for: $0)?.blocking ?? false }
        self.handlerPool = router.routes.contains(where: \.blocking) ? HandlerPool(threads: max(1, limits.handlerThreads)) : nil
    }

    /// The port actually bound (differs from the address's when it asked for port 0);
    /// 0 before ``start()``.
    public var port: Int { lock.withLock { bound?.port ?? 0 } }

    /// The numeric address and port actually bound, as the kernel reports them
    /// (`0.0.0.0:9464` for `:9464`, `127.0.0.1:8377` for `localhost:8377`); nil before
    /// ``start()``. What a banner should show, rather than the address asked for.
    public var boundAddress: HTTPServerAddress? { lock.withLock { bound } }

    /// Registers work to do when the server stops (e.g. stopping a sampler).
    public func onStop(_ hook: @escaping @Sendable () -> Void) {
        lock.withLock { stopHooks.append(hook) }
    }

    /// Binds, listens and starts the server thread. Throws when the address cannot be bound.
    public func start() throws(HTTPServerError) {
        let already = lock.withLock { () -> Bool in
            defer { started = true }
            return started
        }
        if already { throw HTTPServerError(.alreadyStarted, address: address.description, reason: "") }
        let socket = try Self.bind(address)
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            let reason = Self.errnoText()
            close(socket.fd)
            throw HTTPServerError(.bind, address: address.description, reason: "pipe: \(reason)")
        }
        pipeEnds.forEach(Self.makeNonBlocking)
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        lock.withLock {
            listener = socket.fd
            bound = socket.bound
            wakeRead = readEnd
            wakeWrite = writeEnd
        }
        let thread = Thread { [self] in
            serve(listener: socket.fd, wake: readEnd)
            finished.signal()
        }
        thread.name = "courier-http"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Stops accepting, closes every connection, waits for the server thread, and runs the stop hooks.
    public func stop() {
        let (wasRunning, wake, hooks) = lock.withLock { () -> (Bool, Int32, [@Sendable () -> Void]) in
            let running = started && !stopping && listener >= 0
            stopping = true
            defer { stopHooks.removeAll() }
            return (running, wakeWrite, stopHooks)
        }
        if wasRunning {
            var byte: UInt8 = 1
            _ = write(wake, &byte, 1)
            _ = finished.wait(timeout: .now() + 10)
            lock.withLock {
                close(wakeRead)
                close(wakeWrite)
                wakeRead = -1
                wakeWrite = -1
                listener = -1
            }
        }
        handlerPool?.stop()
        hooks.forEach { $0() }
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    // MARK: - The event loop

    private struct Connection {
        enum Phase { case reading, handling, writing, draining }
        let fd: Int32
        /// Unique for the server's life (descriptors are reused): matches a handler's answer to its connection.
        let serial: UInt64
        var phase = Phase.reading
        var input: [UInt8] = []
        var output: [UInt8] = []
        var sent = 0
        /// Bytes read and thrown away after the response (a lingering close).
        var drained = 0
        var deadline: ContinuousClock.Instant
        /// When it was accepted: the oldest unanswered connection is evicted first.
        var accepted: ContinuousClock.Instant
        /// Held in a reserved slot: it may only be answered for a probe route.
        var reserved: Bool
        /// The client's numeric address (``Request/peer``).
        var peer: String?
        /// Whether the answer a handler thread is preparing is sent with its body (not for HEAD).
        var includeBody = true

        /// Whether closing it loses no request in progress: it has not completed a
        /// request head yet, or its answer was sent.
        var isEvictable: Bool { phase != .writing && phase != .handling }
    }

    /// After answering, the server half-closes and reads what the client still sends
    /// for at most this long, so closing never resets the connection before the
    /// client has read the answer.
    static let lingerTime: Duration = .seconds(2)
    static let lingerBytes = 1 << 20

    private func serve(listener: Int32, wake: Int32) {
        var connections: [Int32: Connection] = [:]
        var serial: UInt64 = 0
        defer {
            for fd in connections.keys { close(fd) }
            close(listener)
        }
        while !isStopping {
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            // A connection waiting for its handler is not polled (a hang-up would wake the loop
            // without end); its handler's answer arrives through the wake pipe.
            for connection in connections.values where connection.phase != .handling {
                fds.append(pollfd(fd: connection.fd, events: Int16(connection.phase == .writing ? POLLOUT : POLLIN), revents: 0))
            }
            let now = ContinuousClock.now
            let nearest = connections.values.map(\.deadline).min()
            let wait = nearest.map { Int32(max(0, min(1000, ($0 - now).milliseconds + 1))) } ?? 1000
            let ready = poll(&fds, nfds_t(fds.count), wait)
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 16)
                while read(wake, &drain, drain.count) > 0 {}
                if isStopping { break }
                deliverAnswers(to: &connections)
            }
            if fds[1].revents & Int16(POLLIN) != 0 {
                acceptAll(listener, into: &connections, serial: &serial)
            }
            for entry in fds.dropFirst(2) where entry.revents != 0 {
                guard var connection = connections[entry.fd] else { continue }
                let keep = switch connection.phase {
                case .reading: receive(&connection, others: &connections)
                case .writing: flush(&connection)
                case .draining: drain(&connection)
                case .handling: true
                }
                if keep {
                    connections[entry.fd] = connection
                } else {
                    close(connection.fd)
                    connections[entry.fd] = nil
                }
            }
            let later = ContinuousClock.now
            for (fd, connection) in connections where connection.deadline <= later {
                if connection.phase == .reading || connection.phase == .handling {
                    // Best effort: tell the slow client (or the reason the handler was slow) why, then hang up.
                    let bytes = (connection.phase == .reading ? Response(status: 408, text: "request timeout\n")
                        : Response(status: 503, text: "the handler took too long\n")).serialized()
                    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
                }
                close(fd)
                connections[fd] = nil
            }
        }
    }

    private func acceptAll(_ listener: Int32, into connections: inout [Int32: Connection], serial: inout UInt64) {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }  // EAGAIN: nothing more waiting (or a transient error: try at the next poll)
            Self.makeNonBlocking(fd)
            if connections.count >= limits.maxConnections + limits.reservedConnections,
               !Self.evictOldest(from: &connections, where: { $0.isEvictable }) {
                Self.refuse(fd, Response(status: 503, text: "too many connections\n"))
                continue
            }
            let ordinary = connections.values.lazy.filter { !$0.reserved }.count
            let now = ContinuousClock.now
            serial += 1
            connections[fd] = Connection(fd: fd, serial: serial, deadline: now + limits.requestTimeout, accepted: now,
                                         reserved: ordinary >= limits.maxConnections, peer: Self.socketAddress(fd, peer: true)?.host)
        }
    }

    /// Closes the oldest connection that `eligible` accepts (telling it why, best effort).
    /// Returns false when there was none.
    private static func evictOldest(from connections: inout [Int32: Connection], where eligible: (Connection) -> Bool) -> Bool {
        guard let victim = connections.values.filter(eligible).min(by: { $0.accepted < $1.accepted }) else { return false }
        if victim.phase == .reading { refuse(victim.fd, Response(status: 503, text: "server busy\n")) } else { close(victim.fd) }
        connections[victim.fd] = nil
        return true
    }

    /// Sends `response` without waiting and closes the connection.
    private static func refuse(_ fd: Int32, _ response: Response) {
        let bytes = response.serialized()
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }

    /// Reads what arrived; once the head is complete (or refused) the response is prepared.
    /// Returns false when the connection should be closed.
    private func receive(_ connection: inout Connection, others connections: inout [Int32: Connection]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let room = min(chunk.count, limits.maxHeaderBytes + limits.maxBodyBytes + 1 - connection.input.count)
        let count = room > 0 ? recv(connection.fd, &chunk, room, Int32(MSG_DONTWAIT)) : 0
        if count < 0 {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
        }
        if count == 0 && room > 0 { return false }  // the client went away
        connection.input += chunk[..<count]
        let response: Response
        var includeBody = true
        switch Self.parseRequest(connection.input, maxHeaderBytes: limits.maxHeaderBytes, maxBodyBytes: limits.maxBodyBytes) {
        case .incomplete:
            return true
        case .reject(let status, let message):
            response = Response(status: status, text: message + "\n")
        case .request(let parsed):
            var withPeer = parsed
            withPeer.peer = connection.peer
            let request = withPeer
            includeBody = request.method != "HEAD"
            if connection.reserved && !isProbe(request) {
                // A reserved slot serves probes only, unless an ordinary slot can be freed.
                let fd = connection.fd
                if Self.evictOldest(from: &connections, where: { !$0.reserved && $0.isEvictable && $0.fd != fd }) {
                    connection.reserved = false
                } else {
                    response = Response(status: 503, text: "server busy; only health probes are answered now\n")
                    return answer(&connection, with: response, includeBody: includeBody)
                }
            }
            if let pool = handlerPool, isBlocking(request) {
                connection.input = []
                connection.phase = .handling
                connection.includeBody = includeBody
                connection.deadline = ContinuousClock.now + limits.handlerTimeout
                let serial = connection.serial
                pool.submit { [self] in
                    let response = handler(request)
                    lock.withLock { answered.append((serial, response)) }
                    wakeUp()
                }
                return true
            }
            response = handler(request)
        }
        return answer(&connection, with: response, includeBody: includeBody)
    }

    /// Hands answers from the handler threads to their connections (those still open).
    private func deliverAnswers(to connections: inout [Int32: Connection]) {
        let ready = lock.withLock { () -> [(serial: UInt64, response: Response)] in
            defer { answered.removeAll() }
            return answered
        }
        for (serial, response) in ready {
            guard var connection = connections.values.first(where: { $0.serial == serial && $0.phase == .handling }) else { continue }
            if answer(&connection, with: response, includeBody: connection.includeBody) {
                connections[connection.fd] = connection
            } else {
                close(connection.fd)
                connections[connection.fd] = nil
            }
        }
    }

    private func wakeUp() {
        let fd = lock.withLock { wakeWrite }
        guard fd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }

    /// Starts sending `response`. Returns false when the connection should be closed.
    private func answer(_ connection: inout Connection, with response: Response, includeBody: Bool) -> Bool {
        connection.output = response.serialized(includeBody: includeBody)
        connection.input = []
        connection.sent = 0
        connection.phase = .writing
        connection.deadline = ContinuousClock.now + limits.writeTimeout
        return flush(&connection)
    }

    /// Sends as much of the response as the socket takes; once all is sent, half-closes
    /// and starts draining. Returns false when the connection failed.
    private func flush(_ connection: inout Connection) -> Bool {
        while connection.sent < connection.output.count {
            let sent = connection.output.withUnsafeBytes { buffer in
                send(connection.fd, buffer.baseAddress! + connection.sent, buffer.count - connection.sent,
                     Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if sent < 0 {
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
            }
            connection.sent += sent
        }
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.output = []
        connection.phase = .draining
        connection.deadline = ContinuousClock.now + Self.lingerTime
        return true
    }

    /// Reads and discards until the client closes. Returns false when it has (or sent too much).
    private func drain(_ connection: inout Connection) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = recv(connection.fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
        connection.drained += count
        return count > 0 && connection.drained <= Self.lingerBytes
    }

    // MARK: - Binding

    private static func bind(_ address: HTTPServerAddress) throws(HTTPServerError) -> (fd: Int32, bound: HTTPServerAddress) {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = address.host == nil ? AF_INET : AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard status == 0, let first = list else {
            throw HTTPServerError(.resolve, address: address.description, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var lastError = "no usable address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
            if fd < 0 { lastError = errnoText(); continue }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, listen(fd, 128) == 0 else {
                lastError = errnoText()
                close(fd)
                continue
            }
            return (fd, socketAddress(fd) ?? address)
        }
        throw HTTPServerError(.bind, address: address.description, reason: lastError)
    }

    /// The numeric address and port of a socket's local end (`getsockname`), or of its
    /// peer (`getpeername`) when `peer` is true; nil when the call fails.
    static func socketAddress(_ fd: Int32, peer: Bool = false) -> HTTPServerAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                (peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)) == 0
            }
        }
        guard ok else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var raw = address.pointee.sin_addr
                    guard inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil else { return nil }
                    return HTTPServerAddress(host: String(cString: text), port: Int(UInt16(bigEndian: address.pointee.sin_port)))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var raw = address.pointee.sin6_addr
                    guard inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil else { return nil }
                    return HTTPServerAddress(host: String(cString: text), port: Int(UInt16(bigEndian: address.pointee.sin6_port)))
                }
            }
        default:
            return nil
        }
    }

    /// O_NONBLOCK and FD_CLOEXEC on a descriptor.
    static func makeNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }

    static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
