/// What the command line asks for.
public enum ParseResult: Sendable {
    /// Run this command with these values.
    case run(ParsedCommand)
    /// Print this help text to standard output and exit 0
    /// (`help`, `help CMD SUB`, `--help` or `-h` anywhere, or a bare group name
    /// at the root with no arguments).
    case help(String)
    /// Print this version text and exit 0 (`--version` on a root that declares one).
    case version(String)
}
