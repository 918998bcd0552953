import CourierStore
import Foundation

/// A private PostgreSQL cluster for development and tests (`jobctl devdb`), made
/// from the installed server programs. It listens on 127.0.0.1 and on a Unix
/// socket inside its own directory, trusts local connections, and has a
/// superuser `courier` and a database `courier`.
///
/// PostgreSQL refuses to run as root, so when started by root the cluster runs as
/// the `postgres` system user (created by Debian's package) and its directory is
/// handed to that user.
public struct DevDatabase: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Holds `data/`, `run/` (the socket) and `server.log`.
        public var directory: String
        /// The TCP port. The default, 25432, is below Linux's ephemeral port range, so a
        /// client connection's leftover local port can never be in the way.
        public var port: Int
        /// Turns off fsync and synchronous commit: fast and unsafe, for test suites only.
        public var fast: Bool

        public init(directory: String, port: Int = 25432, fast: Bool = false) {
            self.directory = directory
            self.port = port
            self.fast = fast
        }

        /// `--dir` or `COURIER_DEVDB_DIR`, else `/tmp/courier-devdb-<uid>`.
        public static func defaultDirectory(environment: [String: String]) -> String {
            environment["COURIER_DEVDB_DIR"] ?? "/tmp/courier-devdb-\(getuid())"
        }
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public let configuration: Configuration
    public init(configuration: Configuration) { self.configuration = configuration }

    var dataDirectory: String { configuration.directory + "/data" }
    var socketDirectory: String { configuration.directory + "/run" }
    var logFile: String { configuration.directory + "/server.log" }

    /// The URL of the `courier` database, over the Unix socket.
    public var databaseURL: String { url(database: "courier") }

    /// A URL for any database of the cluster. While the server runs, its port is the one
    /// it actually listens on (from `postmaster.pid`), whatever `--port` says now.
    public func url(database: String) -> String {
        "postgresql:///\(database)?host=\(socketDirectory)&port=\(runningPort ?? configuration.port)&user=courier"
    }

    /// The port of the running server, read from line 4 of `postmaster.pid`.
    var runningPort: Int? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.count > 3 ? Int(lines[3].trimmingCharacters(in: .whitespaces)) : nil
    }

    /// Creates the cluster if needed, starts it if it is not running, and makes sure
    /// the `courier` database exists. Returns the database URL.
    @discardableResult
    public func start() throws -> String {
        let binaries = try Self.serverBinaries()
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        let owner = try Self.serverUser()
        if let owner {
            try run("/bin/chown", ["-R", owner, configuration.directory], asUser: nil)
        }
        if !fileManager.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            try run(binaries + "/initdb", ["-D", dataDirectory, "-U", "courier", "--auth=trust", "-E", "UTF8",
                                           "--no-locale", "--no-sync"], asUser: owner)
        }
        if try !isRunning() {
            var options = "-p \(configuration.port) -k \(socketDirectory) -c listen_addresses=127.0.0.1 -c max_connections=200"
            if configuration.fast {
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            }
            if !Self.portIsFree(configuration.port) {
                let free = ((configuration.port + 1)...min(65535, configuration.port + 100)).first(where: Self.portIsFree)
                throw Failure(description: "port \(configuration.port) on 127.0.0.1 is already in use (another PostgreSQL or program)"
                              + (free.map { "; port \($0) is free: jobctl devdb start --port \($0)" } ?? "; choose another with --port"))
            }
            do {
                try run(binaries + "/pg_ctl", ["-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", options, "start"],
                        asUser: owner)
            } catch let failure as Failure {
                // pg_ctl says only "Examine the log output": show it.
                throw Failure(description: failure.description + "\n" + logTail())
            }
        }
        try ControlStore.databaseCreateIfMissing("courier", adminConfiguration: DatabaseConfiguration(connectionString: url(database: "postgres")))
        return databaseURL
    }

    /// Stops the cluster if it runs (fast shutdown). Its data stays.
    public func stop() throws {
        guard try isRunning() else { return }
        try run(try Self.serverBinaries() + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"], asUser: try Self.serverUser())
    }

    /// Whether the cluster's server is running.
    public func isRunning() throws -> Bool {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") else { return false }
        let status = try execute(try Self.serverBinaries() + "/pg_ctl", ["-D", dataDirectory, "status"], asUser: try Self.serverUser())
        return status.exitCode == 0
    }

    // MARK: - Processes

    /// The directory holding initdb and pg_ctl: `COURIER_PG_BINDIR`, else the newest
    /// `/usr/lib/postgresql/<version>/bin`.
    static func serverBinaries(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        if let explicit = environment["COURIER_PG_BINDIR"] { return explicit }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw Failure(description: "PostgreSQL server programs not found in \(root); install Debian's postgresql package or set COURIER_PG_BINDIR")
    }

    /// The user to run the server as: nil when not root, else `postgres`.
    static func serverUser() throws -> String? {
        guard getuid() == 0 else { return nil }
        guard getpwnam("postgres") != nil else {
            throw Failure(description: "running as root, and there is no 'postgres' user to run the server as; install Debian's postgresql package")
        }
        return "postgres"
    }

    /// The last lines of the server's log, and where it is.
    func logTail(lines: Int = 10) -> String {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        let tail = text.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines)
        return tail.isEmpty ? "the server log \(logFile) is empty"
            : "last lines of the server log \(logFile):\n" + tail.map { "  " + $0 }.joined(separator: "\n")
    }

    /// Whether nothing listens on (or holds) `port` of 127.0.0.1.
    static func portIsFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0
    }

    private func run(_ program: String, _ arguments: [String], asUser user: String?) throws {
        let result = try execute(program, arguments, asUser: user)
        guard result.exitCode == 0 else {
            let name = (program as NSString).lastPathComponent
            throw Failure(description: "\(name) failed (exit \(result.exitCode)): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    /// Sets FD_CLOEXEC on every descriptor above stderr, so spawned programs (and the
    /// server pg_ctl leaves running) inherit none of ours.
    private static func markDescriptorsCloseOnExec() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for entry in entries {
            guard let fd = Int32(entry), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// Runs a program to completion with posix_spawn and waitpid. Foundation's Process
    /// is not used here: the server that pg_ctl starts would inherit Process's
    /// monitoring descriptor and make waitUntilExit hang forever. Every descriptor
    /// above stderr is closed in the child.
    private func execute(_ program: String, _ arguments: [String], asUser user: String?) throws -> (exitCode: Int32, output: String) {
        let argv = user.map { ["/usr/sbin/runuser", "-u", $0, "--", program] + arguments } ?? [program] + arguments
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("courier-devdb-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        Self.markDescriptorsCloseOnExec()
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw Failure(description: "cannot run \(argv[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitCode, output)
    }
}
