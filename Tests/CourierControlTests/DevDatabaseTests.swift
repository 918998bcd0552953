@testable import CourierControl
import Foundation
import Postgres
import Testing

@Suite struct DevDatabaseTests {
    @Test func aRunningClusterIsReachedOnThePortItListensOn() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("devdb-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let database = DevDatabase(configuration: .init(directory: dir, port: 25432))
        #expect(database.databaseURL == "postgresql:///courier?host=\(dir)/run&port=25432&user=courier")
        // A server started earlier with another --port records it in postmaster.pid (line 4).
        let pid = "713\n\(dir)/data\n1795985762\n54329\n\(dir)/run\n127.0.0.1\n 16269468 45\nready\n"
        try pid.write(toFile: dir + "/data/postmaster.pid", atomically: true, encoding: .utf8)
        #expect(database.databaseURL == "postgresql:///courier?host=\(dir)/run&port=54329&user=courier")
    }

    @Test func theDefaultDirectoryFollowsTheEnvironment() {
        #expect(DevDatabase.Configuration.defaultDirectory(environment: ["COURIER_DEVDB_DIR": "/srv/devdb"]) == "/srv/devdb")
        #expect(DevDatabase.Configuration.defaultDirectory(environment: [:]) == "/tmp/courier-devdb-\(getuid())")
    }

    /// Issue 17: `devdb start` on a port already in use said only "pg_ctl failed ...
    /// Examine the log output". It now names the port and a free one.
    @Test func aPortInUseIsNamedWithAFreeOne() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("devdb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(bind(fd, $0, length) == 0)
                try #require(listen(fd, 1) == 0)
                try #require(getsockname(fd, $0, &length) == 0)
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        #expect(!DevDatabase.portIsFree(port))
        let result = jobctl(["devdb", "start", "--dir", dir, "--port", String(port)], databaseURL: nil)
        #expect(result.status == 1, "\(result)")
        #expect(result.err.contains("port \(port) on 127.0.0.1 is already in use"), "\(result.err)")
        #expect(result.err.contains("jobctl devdb start --port "), "suggests a free port: \(result.err)")
    }

    @Test func aFailedStartShowsTheLogsLastLinesAndPath() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("devdb-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let database = DevDatabase(configuration: .init(directory: dir, port: 25432))
        #expect(database.logTail() == "the server log \(dir)/server.log is empty")
        let log = (1...30).map { "line \($0)" }.joined(separator: "\n") + "\nFATAL:  could not create lock file\n"
        try log.write(toFile: dir + "/server.log", atomically: true, encoding: .utf8)
        let tail = database.logTail()
        #expect(tail.hasPrefix("last lines of the server log \(dir)/server.log:"))
        #expect(tail.contains("FATAL:  could not create lock file"))
        #expect(!tail.contains("line 20\n"), "only the last lines: \(tail)")
    }

    /// Issue 43: the devdb trusted TCP connections on 127.0.0.1 and kept its socket in a
    /// predictable /tmp directory, so any local user was its superuser. As the attack:
    /// by default there is no TCP listener at all and the socket's directory is 0700;
    /// with --port, a TCP connection without the generated password is refused.
    @Test func theClusterIsPrivateAndItsTCPPortAsksForThePassword() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("devdb-\(UUID().uuidString)").path
        defer {
            _ = jobctl(["devdb", "stop", "--dir", dir], databaseURL: nil)
            try? FileManager.default.removeItem(atPath: dir)
        }
        let socketOnly = jobctl(["devdb", "start", "--dir", dir, "--fast"], databaseURL: nil)
        try #require(socketOnly.status == 0, "\(socketOnly)")
        #expect(try Self.mode(dir) == 0o700, "the directory it made is private")
        #expect(try Self.mode(dir + "/run") == 0o700, "the socket's directory is private")
        #expect(try Self.mode(dir + "/run/pgpass") == 0o600)
        let url = socketOnly.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let local = try PostgresConnection.connect(PostgresConfiguration(connectionString: url))
        #expect(try local.query("select current_setting('listen_addresses')").rows[0].decode(0, as: String.self) == "",
                "no TCP listener without --port")
        local.close()
        #expect(jobctl(["devdb", "stop", "--dir", dir], databaseURL: nil).status == 0)

        let port = try Self.freePort()
        let withTCP = jobctl(["devdb", "start", "--dir", dir, "--port", String(port), "--fast"], databaseURL: nil)
        try #require(withTCP.status == 0, "\(withTCP)")
        #expect(withTCP.err.contains("\(dir)/run/pgpass"), "says where the password is: \(withTCP.err)")
        let tcp = "host=127.0.0.1 port=\(port) user=courier dbname=courier connect_timeout=10"
        for (attempt, expected) in [("", "no password supplied"), (" password=guess", "password authentication failed")] {
            do {
                let connection = try PostgresConnection.connect(PostgresConfiguration(connectionString: tcp + attempt + " passfile=/nonexistent"))
                connection.close()
                Issue.record("a TCP connection with\(attempt.isEmpty ? "out a" : " a wrong") password was let in")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
        let allowed = try PostgresConnection.connect(PostgresConfiguration(connectionString: tcp + " passfile=\(dir)/run/pgpass"))
        #expect(try allowed.query("select current_user::text").rows[0].decode(0, as: String.self) == "courier")
        allowed.close()
    }

    /// Issue 43: the default directory is a predictable /tmp path, so another user could
    /// make it first and read or replace what the cluster keeps there. A directory
    /// others can write, or a symbolic link, is refused before anything is created in it.
    @Test func aDirectoryOthersCouldHavePreparedIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("devdb-\(UUID().uuidString)").path
        defer {
            _ = jobctl(["devdb", "stop", "--dir", dir], databaseURL: nil)
            try? FileManager.default.removeItem(atPath: dir)
        }
        try #require(mkdir(dir, 0o700) == 0 && chmod(dir, 0o777) == 0)
        let open = jobctl(["devdb", "start", "--dir", dir, "--fast"], databaseURL: nil)
        #expect(open.status == 1 && open.err.contains("\(dir) can be written by others (mode 777)"), "\(open)")
        #expect(open.err.contains("--dir"), "\(open)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/data") && !FileManager.default.fileExists(atPath: dir + "/run"))

        let link = dir + "-link"
        try #require(symlink(dir, link) == 0)
        defer { unlink(link) }
        let linked = jobctl(["devdb", "start", "--dir", link, "--fast"], databaseURL: nil)
        #expect(linked.status == 1 && linked.err.contains("\(link) is a symbolic link"), "\(linked)")

        let owners: Set<uid_t> = [1000]
        #expect(DevDatabase.directoryProblem(isDirectory: true, isSymbolicLink: false, owner: 1001, mode: 0o700, owners: owners)
                == "belongs to another user (uid 1001)")
        #expect(DevDatabase.directoryProblem(isDirectory: true, isSymbolicLink: false, owner: 1000, mode: 0o775, owners: owners) != nil)
        #expect(DevDatabase.directoryProblem(isDirectory: true, isSymbolicLink: false, owner: 1000, mode: 0o755, owners: owners) == nil)
        #expect(DevDatabase.directoryProblem(isDirectory: false, isSymbolicLink: false, owner: 1000, mode: 0o700, owners: owners) != nil)
    }

    @Test func theServerListensOnTCPOnlyWhenAskedAndNeverTrustsIt() {
        let socketOnly = DevDatabase(configuration: .init(directory: "/tmp/it's", port: 6000))
        #expect(socketOnly.serverOptions.contains("-c listen_addresses=''"))
        #expect(socketOnly.serverOptions.contains("-k '/tmp/it'\\''s/run'"), "the path is quoted for pg_ctl's shell")
        #expect(DevDatabase(configuration: .init(directory: "/d", port: 6000, tcp: true)).serverOptions.contains("-c listen_addresses=127.0.0.1"))
        let hostLines = DevDatabase.hostBasedAuthentication.split(separator: "\n").filter { $0.hasPrefix("host") }
        #expect(hostLines == ["host    all   all   127.0.0.1/32   scram-sha-256"])
        #expect(DevDatabase.passwordInPassfile(DevDatabase.passfileLines(password: "abc123")) == "abc123")
        #expect(DevDatabase.generatedPassword().count == 64)
    }

    static func mode(_ path: String) throws -> mode_t {
        var status = stat()
        try #require(lstat(path, &status) == 0, "\(path) exists")
        return status.st_mode & 0o7777
    }

    /// A port nothing listens on now (the kernel's pick, released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
