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
}
