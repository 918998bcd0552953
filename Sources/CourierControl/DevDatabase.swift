import CourierStore
import Foundation

/// A private PostgreSQL cluster for development and tests (`jobctl devdb`), made
/// from the installed server programs, with a superuser `courier` and a database
/// `courier`. It listens on a Unix socket in `DIR/run`, a directory only the
/// cluster's owner may enter (0700), and trusts connections there; nobody else on
/// the machine can reach the socket. Only when asked for (``Configuration/tcp``,
/// `--port`) does it listen on 127.0.0.1 too, where it asks for a generated password
/// (SCRAM), kept in `DIR/run/pgpass` (0600, libpq's passfile format).
///
/// PostgreSQL refuses to run as root, so when started by root the cluster runs as
/// the `postgres` system user (created by Debian's package) and its directory is
/// handed to that user.
public struct DevDatabase: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Holds `data/`, `run/` (the socket and the password file) and `server.log`.
        /// It must not be writable by others; it is made 0700 when created.
        public var directory: String
        /// The port: it names the Unix socket (`run/.s.PGSQL.PORT`) and, with ``tcp``,
        /// is the TCP port on 127.0.0.1.
        public var port: Int
        /// Whether to listen on 127.0.0.1:``port`` as well, with a password. Default
        /// false: the Unix socket only.
        public var tcp: Bool
        /// Turns off fsync and synchronous commit: fast and unsafe, for test suites only.
        public var fast: Bool

        /// The default port, 25432: below Linux's ephemeral port range, so a client
        /// connection's leftover local port can never be in the way.
        public static let defaultPort = 25432

        public init(directory: String, port: Int = defaultPort, tcp: Bool = false, fast: Bool = false) {
            self.directory = directory
            self.port = port
            self.tcp = tcp
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
    /// The generated password of `courier` for TCP connections, as a libpq passfile
    /// (`PGPASSFILE`), 0600 inside the private `run/`.
    public var passwordFile: String { socketDirectory + "/pgpass" }

    /// The user the TCP password belongs to (the cluster's superuser).
    static let superuser = "courier"

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
    /// the `courier` database exists. Returns the database URL (over the Unix socket).
    ///
    /// Every start makes `run/` private (0700) after checking that the directory is
    /// not someone else's, rewrites `pg_hba.conf` (trust on the socket, SCRAM on TCP),
    /// and sets `courier`'s password from ``passwordFile`` (generated on first use).
    @discardableResult
    public func start() throws -> String {
        let binaries = try Self.serverBinaries()
        let owner = try Self.serverUser()
        let owners = try Self.acceptedOwners(serverUser: owner)
        try Self.makePrivateDirectory(configuration.directory, owners: owners, forceMode: false)
        try Self.makePrivateDirectory(socketDirectory, owners: owners, forceMode: true)
        let password = try passwordFromFile()
        if let owner {
            try run("/bin/chown", ["-R", owner, configuration.directory], asUser: nil)
        }
        if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            // Trust is initdb's only choice without a password file; pg_hba.conf is replaced before the server starts.
            try run(binaries + "/initdb", ["-D", dataDirectory, "-U", Self.superuser, "--auth=trust", "-E", "UTF8",
                                           "--no-locale", "--no-sync"], asUser: owner)
        }
        try Self.writePrivateFile(dataDirectory + "/pg_hba.conf", Self.hostBasedAuthentication, owner: owner)
        if try isRunning() {
            try run(binaries + "/pg_ctl", ["-D", dataDirectory, "reload"], asUser: owner)
        } else {
            if configuration.tcp && !Self.portIsFree(configuration.port) {
                let free = ((configuration.port + 1)...min(65535, configuration.port + 100)).first(where: Self.portIsFree)
                throw Failure(description: "port \(configuration.port) on 127.0.0.1 is already in use (another PostgreSQL or program)"
                              + (free.map { "; port \($0) is free: jobctl devdb start --port \($0)" } ?? "; choose another with --port"))
            }
            do {
                try run(binaries + "/pg_ctl", ["-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", serverOptions, "start"],
                        asUser: owner)
            } catch let failure as Failure {
                // pg_ctl says only "Examine the log output": show it.
                throw Failure(description: failure.description + "\n" + logTail())
            }
        }
        let admin = DatabaseConfiguration(connectionString: url(database: "postgres"))
        try ControlStore.databaseCreateIfMissing("courier", adminConfiguration: admin)
        try ControlStore.rolePasswordSet(Self.superuser, password: password, adminConfiguration: admin)
        return databaseURL
    }

    /// `pg_hba.conf`, written on every start: trust on the Unix socket (whose directory
    /// only the owner can enter), the generated password (SCRAM) on 127.0.0.1.
    static let hostBasedAuthentication = """
        # Written by `jobctl devdb start` on every start: edits here are lost.
        # The Unix socket is in a directory only the cluster's owner may enter (0700).
        local   all   all                  trust
        # TCP (only with --port): the generated password, in run/pgpass.
        host    all   all   127.0.0.1/32   scram-sha-256

        """

    /// The server's command-line options (pg_ctl -o, which a shell splits): the port,
    /// the socket directory, and listen_addresses 127.0.0.1 with ``Configuration/tcp``,
    /// else none (no TCP listener at all).
    var serverOptions: String {
        var options = "-p \(configuration.port) -k \(Self.shellQuoted(socketDirectory))"
            + " -c listen_addresses=\(configuration.tcp ? "127.0.0.1" : "''")"
            + " -c unix_socket_permissions=0700 -c password_encryption=scram-sha-256 -c max_connections=200"
        if configuration.fast {
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        }
        return options
    }

    /// `text` in single quotes for /bin/sh.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The password in ``passwordFile``, generating the file (0600) on first use.
    func passwordFromFile() throws -> String {
        if let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) {
            guard let password = Self.passwordInPassfile(text) else {
                throw Failure(description: "\(passwordFile) is not a password file jobctl devdb wrote; remove it to make a new password")
            }
            return password
        }
        let password = Self.generatedPassword()
        try Self.writePrivateFile(passwordFile, Self.passfileLines(password: password), owner: nil)
        return password
    }

    /// libpq passfile lines giving `password` to `courier` on 127.0.0.1 and localhost, any port.
    static func passfileLines(password: String) -> String {
        ["127.0.0.1", "localhost"].map { "\($0):*:*:\(superuser):\(password)\n" }.joined()
    }

    /// The password of the first line of a passfile ``passfileLines(password:)`` wrote.
    static func passwordInPassfile(_ text: String) -> String? {
        guard let line = text.split(whereSeparator: \.isNewline).first else { return nil }
        let fields = line.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, fields[3] == superuser[...], !fields[4].isEmpty else { return nil }
        return String(fields[4])
    }

    /// 32 random bytes as hex, from the system's secure generator.
    static func generatedPassword() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
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

    // MARK: - Private files

    /// Who may own the cluster's directories: this user, and the server's user when that
    /// is another (root runs the server as `postgres`).
    static func acceptedOwners(serverUser: String?) throws -> Set<uid_t> {
        var owners: Set<uid_t> = [getuid()]
        if let serverUser {
            guard let entry = getpwnam(serverUser) else { throw Failure(description: "no user '\(serverUser)'") }
            owners.insert(entry.pointee.pw_uid)
        }
        return owners
    }

    /// Why the directory with this `lstat` result is not safe to keep a cluster in, or
    /// nil when it is: it must be a real directory (not a symbolic link), owned by one
    /// of `owners`, and writable by nobody else (no group or other write bit). Pure.
    static func directoryProblem(isDirectory: Bool, isSymbolicLink: Bool, owner: uid_t, mode: mode_t, owners: Set<uid_t>) -> String? {
        if isSymbolicLink { return "is a symbolic link" }
        if !isDirectory { return "is not a directory" }
        if !owners.contains(owner) { return "belongs to another user (uid \(owner))" }
        if mode & 0o022 != 0 { return "can be written by others (mode \(String(mode & 0o7777, radix: 8)))" }
        return nil
    }

    /// Creates `path` as a 0700 directory, or checks the one there with
    /// ``directoryProblem(isDirectory:isSymbolicLink:owner:mode:owners:)`` so that a
    /// directory another user made in advance (the default is a predictable /tmp path)
    /// is refused; with `forceMode` an accepted one is made 0700 too.
    static func makePrivateDirectory(_ path: String, owners: Set<uid_t>, forceMode: Bool) throws {
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty { try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
            guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
                throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            guard lstat(path, &status) == 0 else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
        }
        let kind = status.st_mode & S_IFMT
        if let problem = directoryProblem(isDirectory: kind == S_IFDIR, isSymbolicLink: kind == S_IFLNK, owner: status.st_uid,
                                          mode: status.st_mode, owners: owners) {
            throw Failure(description: "\(path) \(problem): a devdb directory must be private to its owner; "
                          + "remove it or choose another with --dir")
        }
        if forceMode && status.st_mode & 0o7777 != 0o700 {
            guard chmod(path, 0o700) == 0 else { throw Failure(description: "cannot chmod 0700 \(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// Writes `text` to `path` with mode 0600 (replacing it), owned by `owner` when given.
    static func writePrivateFile(_ path: String, _ text: String, owner: String?) throws {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if let owner, let entry = getpwnam(owner) { _ = chown(temporary, entry.pointee.pw_uid, entry.pointee.pw_gid) }
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
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
