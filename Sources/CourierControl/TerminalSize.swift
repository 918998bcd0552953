import Foundation

/// A terminal's size in character cells.
public struct TerminalSize: Sendable, Equatable {
    public var rows: Int
    public var columns: Int
    public init(rows: Int, columns: Int) {
        self.rows = rows
        self.columns = columns
    }

    /// Standard output's size (TIOCGWINSZ), or nil when it is not a terminal or says 0.
    public static func ofStandardOutput() -> TerminalSize? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0, size.ws_col > 0 else { return nil }
        return TerminalSize(rows: Int(size.ws_row), columns: Int(size.ws_col))
    }
}
