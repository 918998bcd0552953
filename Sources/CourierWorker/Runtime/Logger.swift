import CourierCore
import Foundation

/// One line per event, logfmt (default) or JSON, written to standard error.
/// Values are written as given: callers never pass header values or bodies.
public final class Logger: @unchecked Sendable {
    public enum Format: String, Sendable, CaseIterable { case logfmt, json }
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug = 0, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warn", "error"][rawValue] }
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warn", "warning": self = .warning
            case "error": self = .error
            default: return nil
            }
        }
    }

    private let format: Format
    private let minimum: Level
    private let lock = NSLock()
    private let sink: @Sendable (String) -> Void
    /// Fields added to every line (e.g. the worker id).
    private let context: [(String, String)]

    public init(format: Format = .logfmt, level: Level = .info, context: [(String, String)] = [],
                sink: @escaping @Sendable (String) -> Void = Logger.writeToStandardError) {
        self.format = format
        self.minimum = level
        self.context = context
        self.sink = sink
    }

    /// Writes `line` to file descriptor 2, ignoring failures: a closed pipe (EPIPE, with
    /// SIGPIPE ignored) must not stop the worker, and FileHandle traps on write errors.
    public static let writeToStandardError: @Sendable (String) -> Void = { line in
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written > 0 { offset += written } else if written < 0 && errno == EINTR { continue } else { return }
        }
    }

    public func debug(_ message: String, _ fields: [(String, any Sendable)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, any Sendable)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, any Sendable)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, any Sendable)] = []) { log(.error, message, fields) }

    public func isEnabled(_ level: Level) -> Bool { level >= minimum }

    public func log(_ level: Level, _ message: String, _ fields: [(String, any Sendable)]) {
        guard level >= minimum else { return }
        let time = Timestamp.format(Date())
        var all: [(String, String)] = [("time", time), ("level", level.name), ("msg", message)]
        all += context
        all += fields.map { ($0.0, "\($0.1)") }
        let line = format == .json ? Self.json(all) : Self.logfmt(all)
        lock.lock()
        sink(line + "\n")
        lock.unlock()
    }

    static func logfmt(_ fields: [(String, String)]) -> String {
        fields.map { key, value in
            let needsQuotes = value.isEmpty || value.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" || $0.isNewline })
            guard needsQuotes else { return "\(key)=\(value)" }
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(escaped)\""
        }.joined(separator: " ")
    }

    static func json(_ fields: [(String, String)]) -> String {
        let body = fields.map { key, value in "\(JSONText.quoted(key)):\(JSONText.quoted(value))" }.joined(separator: ",")
        return "{\(body)}"
    }
}
