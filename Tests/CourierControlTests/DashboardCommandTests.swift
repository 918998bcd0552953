import Foundation
import Testing

/// `jobctl dashboard`'s bad usage: each mistake names its flag, exits 2, and serves nothing.
@Suite struct DashboardCommandTests {
    @Test func badFlagsNameThemselvesAndExit2() throws {
        let listen = jobctl(["dashboard", "--listen", "nowhere"], databaseURL: "postgresql:///x")
        #expect(listen.status == 2 && listen.err.contains("--listen"), "\(listen)")
        let missing = jobctl(["dashboard", "--token-file", "/nonexistent/token"], databaseURL: "postgresql:///x")
        #expect(missing.status == 2 && missing.err.contains("--token-file"), "\(missing)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("short-token-\(UUID().uuidString)")
        try "short\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let short = jobctl(["dashboard", "--token-file", file.path], databaseURL: "postgresql:///x")
        #expect(short.status == 2 && short.err.contains("at least 16 characters"), "\(short)")
    }

    @Test func anUnreachableDatabaseIsARuntimeFailure() {
        let outcome = jobctl(["dashboard", "--listen", "127.0.0.1:0"], databaseURL: "postgresql:///x?host=/nonexistent&port=1")
        #expect(outcome.status == 1 && outcome.err.contains("cannot reach the database"), "\(outcome)")
    }
}
