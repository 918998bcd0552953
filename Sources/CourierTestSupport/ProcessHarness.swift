import Foundation

/// Runs the built executables (`jobworker`, `jobctl`) as separate processes, the
/// way users run them. The test command exports `COURIER_BIN_DIR`; without it
/// the tests fail with a message saying so.
public final class SpawnedProcess: @unchecked Sendable {
    public let process = Process()
    public let logFile: URL

    /// The directory holding the built executables.
    public static func binDirectory() throws -> String {
        guard let dir = ProcessInfo.processInfo.environment["COURIER_BIN_DIR"], !dir.isEmpty else {
            throw SpawnError(message: "COURIER_BIN_DIR is not set: run the suite with scripts/test.sh, which builds the executables and exports it")
        }
        return dir
    }

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let dir = try Self.binDirectory()
        process.executableURL = URL(fileURLWithPath: dir + "/" + executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(executable)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Everything the process wrote so far.
    public var output: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for exit up to `timeout`; returns the exit status, or nil if still running.
    public func wait(timeout: Duration) -> Int32? {
        let end = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < end { Thread.sleep(forTimeInterval: 0.02) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// The async form of `wait`, for async tests: it does not hold a cooperative thread.
    public func waitForExit(timeout: Duration) async -> Int32? {
        let end = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Kills the process if it still runs, and removes its log.
    public func cleanUp() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: logFile)
    }

    /// Runs a command to completion and returns its exit status and output.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Duration = .seconds(120)) throws -> (status: Int32, output: String) {
        let spawned = try SpawnedProcess(executable, arguments, environment: environment)
        defer { spawned.cleanUp() }
        guard let status = spawned.wait(timeout: timeout) else {
            throw SpawnError(message: "\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
        }
        return (status, spawned.output)
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
