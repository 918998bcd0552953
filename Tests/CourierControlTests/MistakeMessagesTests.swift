import CourierControl
import CourierTestSupport
import Foundation
import Testing

/// Mistakes a new user makes, and what jobctl says about them.
struct MistakeMessagesTests {
    @Test func noArgumentsIsAUsageErrorThatShowsTheHelp() {
        let result = jobctl([], databaseURL: nil)
        #expect(result.status == 2, "\(result)")
        #expect(result.err.contains("Usage: jobctl") && result.err.contains("migrate"), "\(result)")
        #expect(result.out.isEmpty)
    }

    @Test(arguments: ["not a url", "host name with spaces"])
    func aDatabaseURLThatIsNoConnectionStringIsBadInput(_ text: String) {
        let result = jobctl(["list"], databaseURL: text)
        #expect(result.status == 2, "\(result)")
        #expect(result.err.contains("--database-url") && result.err.contains("neither a postgresql:// URI nor key=value conninfo"), "\(result)")
        let fromEnvironment = jobctl(["list"], databaseURL: nil, environment: ["DATABASE_URL": text])
        #expect(fromEnvironment.status == 2 && fromEnvironment.err.contains("DATABASE_URL"), "\(fromEnvironment)")
    }

    @Test func aBareDatabaseNameIsStillAccepted() {
        // Reaches libpq (and fails to connect here), rather than being refused as bad input.
        let result = jobctl(["list"], databaseURL: "courier_db")
        #expect(result.status == 1, "\(result)")
        #expect(result.err.contains("cannot connect to the database"), "\(result)")
    }

    @Test func aRefusedConnectionSaysSoOnce() {
        let result = jobctl(["list"], databaseURL: "postgresql://courier@127.0.0.1:1/courier?connect_timeout=5")
        #expect(result.status == 1, "\(result)")
        #expect(result.err.components(separatedBy: "connection to server").count - 1 == 1, "\(result)")
        #expect(!result.err.contains("connection: connection"), "\(result)")
        #expect(!result.err.contains("hint: no database was given"), "a database was given: \(result)")
    }

    @Test func noDatabaseAtAllHintsAtDatabaseURLAndDevdb() {
        let result = jobctl(["list"], databaseURL: nil, environment: [:])
        #expect(result.status == 1, "\(result)")
        #expect(result.err.contains("hint: no database was given") && result.err.contains("DATABASE_URL")
                && result.err.contains("jobctl devdb start"), "\(result)")
    }
}
