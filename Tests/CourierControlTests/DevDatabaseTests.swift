@testable import CourierControl
import Foundation
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
}
