import Foundation
import Glibc

/// A program run with posix_spawn (stdin from /dev/null, stdout and stderr appended to
/// a log file) and reaped with waitpid, so exit times are exact.
final class ChildProcess {
    let pid: pid_t
    let logPath: String
    private(set) var exitStatus: Int32?

    init(_ program: String, _ arguments: [String], logPath: String, environment: [String: String] = [:]) throws {
        self.logPath = logPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let rc = posix_spawn(&child, program, &actions, nil, argv, envp)
        guard rc == 0 else { throw BenchError("cannot run \(program): \(String(cString: strerror(rc)))") }
        pid = child
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// Waits up to `timeout` for the exit; returns the exit code (128+signal if killed), nil if still running.
    @discardableResult
    func wait(timeout: Double) -> Int32? {
        if let exitStatus { return exitStatus }
        let end = monotonicSeconds() + timeout
        repeat {
            var status: Int32 = 0
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid {
                let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                exitStatus = code
                return code
            }
            if rc < 0 && errno != EINTR { return nil }
            usleep(2_000)
        } while monotonicSeconds() < end
        return nil
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace` seconds.
    func stop(grace: Double = 30) {
        guard exitStatus == nil else { return }
        signal(SIGTERM)
        if wait(timeout: grace) == nil {
            signal(SIGKILL)
            wait(timeout: 10)
        }
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
