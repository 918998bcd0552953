import Foundation
import Glibc
import Postgres

/// A loopback TCP proxy between a client (a worker) and PostgreSQL that a test can
/// freeze: while frozen it forwards nothing and accepts nothing, but closes nothing,
/// as a proxy or database stopped with SIGSTOP would. The client's kernel still sees a
/// healthy TCP peer (data is acknowledged, keepalives answered), so only the client's
/// own timers can notice the silence.
///
///     let proxy = try FreezableProxy(forwardingTo: database.url)
///     let url = proxy.url(for: database.url)   // the same database, through the proxy
///     proxy.freeze(); ...; proxy.thaw()
///
/// It can also hold only the server's replies (statements still reach PostgreSQL and
/// commit, their answers wait: a reply lost in the network) and cut every open connection
/// while it goes on accepting new ones (a link that drops).
public final class FreezableProxy: @unchecked Sendable {
    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    private let target: Target
    private let listenFD: Int32
    private let condition = NSCondition()
    private var frozen = false
    private var repliesHeld = false
    private var stopped = false
    private var sockets: Set<Int32> = []
    private var acceptedCount = 0
    private var clientSendCount = 0

    enum Target {
        case unix(path: String)
        case tcp(host: String, port: UInt16)
    }

    /// Listens on 127.0.0.1 and forwards each connection to the server `connectionString`
    /// names (its `host`, a socket directory or a TCP host, and `port`).
    public init(forwardingTo connectionString: String) throws {
        let parameters = try PostgresConnectionString.parse(connectionString)
        let host = parameters.last { $0.key == "host" }?.value ?? "/tmp"
        let port = parameters.last { $0.key == "port" }?.value.split(separator: ",").first.flatMap { UInt16($0) } ?? 5432
        target = host.hasPrefix("/") ? .unix(path: "\(host)/.s.PGSQL.\(port)") : .tcp(host: host, port: port)

        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FaultServerError(step: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = FaultServer.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0, let listening = FaultServer.localPort(of: fd) else {
            let code = errno
            close(fd)
            throw FaultServerError(step: "bind/listen", errno: code)
        }
        listenFD = fd
        self.port = listening
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "freezable-proxy-accept"
        thread.start()
    }

    deinit { stop() }

    /// `connectionString` with its host and port replaced by the proxy's.
    public func url(for connectionString: String) throws -> String {
        var parameters = try PostgresConnectionString.parse(connectionString).filter { $0.key != "host" && $0.key != "port" && $0.key != "hostaddr" }
        parameters.append(("host", "127.0.0.1"))
        parameters.append(("port", String(port)))
        return PostgresConnectionString.render(parameters)
    }

    /// Stops forwarding in both directions and accepting, without closing anything.
    public func freeze() { condition.withLock { frozen = true } }

    /// Forwards again what waited, and accepts again.
    public func thaw() {
        condition.withLock { frozen = false }
        condition.broadcast()
    }

    /// Holds what PostgreSQL sends (replies, notifications) while still forwarding what
    /// clients send: statements run and commit, and their answers wait.
    public func holdReplies() { condition.withLock { repliesHeld = true } }

    /// Forwards the held replies again.
    public func releaseReplies() {
        condition.withLock { repliesHeld = false }
        condition.broadcast()
    }

    /// Closes every open connection (both sides), as a dropped link would; replies held
    /// are lost. New connections are still accepted.
    public func cutConnections() {
        let open = condition.withLock { sockets }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        condition.broadcast()
    }

    /// Connections accepted so far.
    public var connectionsAccepted: Int { condition.withLock { acceptedCount } }

    /// The reads from clients forwarded to PostgreSQL so far, about one per statement (or
    /// connection start-up) a client sent: while replies are held, how many answers wait.
    public var clientSendsForwarded: Int { condition.withLock { clientSendCount } }

    /// Closes the listener and every connection.
    public func stop() {
        let open = condition.withLock { () -> Set<Int32>? in
            guard !stopped else { return nil }
            stopped = true
            return sockets
        }
        condition.broadcast()
        guard let open else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Waits while frozen (or, for the server's direction, while replies are held); false
    /// once stopped.
    private func waitWhileFrozen(replies: Bool = false) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while (frozen || (replies && repliesHeld)) && !stopped { condition.wait() }
        return !stopped
    }

    private func acceptLoop() {
        while waitWhileFrozen() {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            guard let server = connectTarget() else {
                close(client)
                continue
            }
            let admitted = condition.withLock { () -> Bool in
                guard !stopped else { return false }
                sockets.insert(client)
                sockets.insert(server)
                acceptedCount += 1
                return true
            }
            guard admitted else {
                close(client)
                close(server)
                return
            }
            let remaining = ConnectionPair(client: client, server: server)
            for (from, to) in [(client, server), (server, client)] {
                let thread = Thread { [self] in
                    pump(from: from, to: to, replies: from == server)
                    if remaining.oneDirectionDone() {
                        condition.withLock {
                            sockets.remove(client)
                            sockets.remove(server)
                        }
                        close(client)
                        close(server)
                    }
                }
                thread.stackSize = 256 * 1024
                thread.start()
            }
        }
    }

    /// Copies bytes until either side closes; never reads while frozen (nor, carrying
    /// `replies`, while replies are held).
    private func pump(from: Int32, to: Int32, replies: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while waitWhileFrozen(replies: replies) {
            var descriptor = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { break }
            if ready == 0 { continue }
            // Frozen between poll and read: leave the bytes where they are.
            guard waitWhileFrozen(replies: replies) else { break }
            let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            var offset = 0
            while offset < count {
                let sent = buffer.withUnsafeBytes { send(to, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                offset += sent
            }
            if offset < count { break }
            if !replies { condition.withLock { clientSendCount += 1 } }
        }
        shutdown(from, Int32(SHUT_RDWR))
        shutdown(to, Int32(SHUT_RDWR))
    }

    private func connectTarget() -> Int32? {
        switch target {
        case .unix(let path):
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
                close(fd)
                return nil
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let ok = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if ok != 0 {
                close(fd)
                return nil
            }
            return fd
        case .tcp(let host, let port):
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
            defer { freeaddrinfo(list) }
            let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            if connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 {
                close(fd)
                return nil
            }
            return fd
        }
    }
}

/// Counts the two directions of one proxied connection: the second to finish closes it.
private final class ConnectionPair: @unchecked Sendable {
    let client: Int32
    let server: Int32
    private let lock = NSLock()
    private var done = 0
    init(client: Int32, server: Int32) {
        self.client = client
        self.server = server
    }
    func oneDirectionDone() -> Bool {
        lock.withLock {
            done += 1
            return done == 2
        }
    }
}
