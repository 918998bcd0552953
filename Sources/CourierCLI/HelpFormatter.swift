/// Derives help text from command declarations: the abstract, a usage line,
/// the discussion, tables of subcommands, arguments, options and global
/// options (with defaults, allowed values and environment variables), and
/// examples. Text is wrapped at ``width`` columns, deterministically: the
/// output depends only on the declarations.
public enum HelpFormatter {
    /// The column at which text is wrapped.
    public static let width = 80
    /// The widest left column in a table before the description moves to its own line.
    static let maxLeftColumn = 26

    /// The help for the command at `path` (subcommand names below `root`), or
    /// nil when the path does not name a command.
    public static func help(root: CommandSpec, path: [String]) -> String? {
        guard let chain = root.chain(for: path) else { return nil }
        return help(for: chain)
    }

    /// The help for `command`, invoked as `path` (root name first, e.g.
    /// `["jobctl", "dead", "replay"]`), with `inherited` global arguments from
    /// the commands above it.
    public static func help(for command: CommandSpec, path: [String], inherited: [ArgumentSpec] = []) -> String {
        var sections: [[String]] = []
        sections.append(TextWrapper.wrap(command.abstract, width: width))
        sections.append(usage(command, path: path))
        if let discussion = command.discussion {
            sections.append(TextWrapper.paragraphs(discussion, width: width))
        }
        if command.isGroup {
            var rows = command.leafPaths().map { leaf -> (String, String) in
                (leaf.joined(separator: " "), command.chain(for: leaf)?.last?.abstract ?? "")
            }
            if path.count == 1 {
                rows.append(("help [COMMAND...]", "Show help for a command."))
            }
            sections.append(["Commands:"] + table(rows, leftWidth: min(rows.map(\.0.count).max() ?? 0, maxLeftColumn)))
        }
        let argumentRows = command.arguments.filter(\.isPositional).map(row)
        var optionRows = command.arguments.filter { !$0.isPositional }.map(row)
        optionRows.append(("-h, --help", "Show this help."))
        if command.version != nil, path.count == 1 {
            optionRows.append(("--version", "Show the version."))
        }
        let globalRows = inherited.map(row)
        // One column for the three argument tables, so they line up.
        let leftWidth = min((argumentRows + optionRows + globalRows).map(\.0.count).max() ?? 0, maxLeftColumn)
        if !argumentRows.isEmpty {
            sections.append(["Arguments:"] + table(argumentRows, leftWidth: leftWidth))
        }
        sections.append(["Options:"] + table(optionRows, leftWidth: leftWidth))
        if !globalRows.isEmpty {
            sections.append(["Global options:"] + table(globalRows, leftWidth: leftWidth))
        }
        if command.isGroup {
            sections.append(TextWrapper.wrap(
                "Run '\(path.joined(separator: " ")) COMMAND --help' for a command's options.", width: width))
        }
        if !command.examples.isEmpty {
            sections.append(["Examples:"] + command.examples.flatMap { example in
                example.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }
            })
        }
        return sections.map { $0.joined(separator: "\n") }.joined(separator: "\n\n")
    }

    /// The help for the last command of `chain`.
    static func help(for chain: [CommandSpec]) -> String {
        let inherited = chain.dropLast().flatMap { $0.arguments.filter(\.isGlobal) }
        return help(for: chain[chain.count - 1], path: chain.map(\.name), inherited: inherited)
    }

    // MARK: - Usage line

    /// `Usage: jobctl enqueue (--url URL | --ndjson [FILE]) [--method METHOD] ...`,
    /// wrapped between elements with a hanging indent.
    static func usage(_ command: CommandSpec, path: [String]) -> [String] {
        let lead = "Usage: " + path.joined(separator: " ")
        var elements = synopsis(command)
        if command.isGroup { elements.append("COMMAND") }
        let indent = lead.count + 1 <= 32 ? lead.count + 1 : 8
        var lines: [String] = []
        var line = lead
        for element in elements {
            if line.count + 1 + element.count > width, line.count > indent {
                lines.append(line)
                line = String(repeating: " ", count: indent) + element
            } else {
                line += " " + element
            }
        }
        lines.append(line)
        return lines
    }

    /// The usage elements for a command's own arguments, in declaration order;
    /// an exclusive group becomes one `[a | b]` element, or `(a | b)` when one
    /// of its members is required.
    static func synopsis(_ command: CommandSpec) -> [String] {
        var elements: [String] = []
        var seenGroups: Set<String> = []
        for argument in command.arguments {
            guard let group = argument.exclusiveGroup else {
                let form = bare(argument)
                let isRequired = argument.required && argument.defaultValue == nil
                if isRequired {
                    elements.append(form + (argument.repeatable ? "..." : ""))
                } else if argument.isPositional {
                    elements.append("[" + form + (argument.repeatable ? "..." : "") + "]")
                } else {
                    elements.append("[" + form + "]" + (argument.repeatable ? "..." : ""))
                }
                continue
            }
            guard seenGroups.insert(group).inserted else { continue }
            let members = command.arguments.filter { $0.exclusiveGroup == group }
            let inner = members.map { bare($0) + ($0.repeatable ? "..." : "") }.joined(separator: " | ")
            let memberNames = Set(members.map(\.long))
            let isRequired = command.constraints.contains { constraint in
                if case .atLeastOne(let names) = constraint { return Set(names) == memberNames }
                return false
            }
            elements.append(isRequired ? "(" + inner + ")" : "[" + inner + "]")
        }
        return elements
    }

    /// `--limit N`, `--ndjson [FILE]`, `--json`, `ID`.
    static func bare(_ argument: ArgumentSpec) -> String {
        switch argument.kind {
        case .flag:
            return "--" + argument.long
        case .option(let valueName):
            let value = argument.implicitValue == nil ? valueName : "[" + valueName + "]"
            return "--" + argument.long + " " + value
        case .positional(let valueName):
            return valueName
        }
    }

    // MARK: - Tables

    /// The left and right cells describing one argument.
    static func row(_ argument: ArgumentSpec) -> (String, String) {
        var left: String
        switch argument.kind {
        case .positional(let valueName):
            left = valueName + (argument.repeatable ? "..." : "")
        case .flag, .option:
            left = bare(argument)
            if let short = argument.short { left = "-\(short), " + left }
        }
        // A no-break space keeps "default: 30s" and "env: NAME" on one line.
        var notes: [String] = []
        if argument.repeatable, !argument.isPositional { notes.append("repeatable") }
        if let allowed = argument.allowedValues { notes.append("values: " + allowed.joined(separator: ", ")) }
        if let value = argument.defaultValue { notes.append("default:" + TextWrapper.noBreakSpace + value) }
        if let variable = argument.environmentVariable { notes.append("env:" + TextWrapper.noBreakSpace + variable) }
        var help = argument.help
        if !notes.isEmpty { help += " (" + notes.joined(separator: "; ") + ")" }
        return (left, help)
    }

    /// Two aligned columns, the right one wrapped; a left cell wider than
    /// `leftWidth` puts its description on the following lines.
    static func table(_ rows: [(String, String)], leftWidth: Int) -> [String] {
        let column = 2 + leftWidth + 2
        let pad = String(repeating: " ", count: column)
        var lines: [String] = []
        for (left, right) in rows {
            let wrapped = TextWrapper.wrap(right, width: width - column)
            if wrapped.isEmpty {
                lines.append("  " + left)
            } else if left.count <= leftWidth {
                lines.append("  " + left + String(repeating: " ", count: leftWidth - left.count + 2) + wrapped[0])
                lines.append(contentsOf: wrapped.dropFirst().map { pad + $0 })
            } else {
                lines.append("  " + left)
                lines.append(contentsOf: wrapped.map { pad + $0 })
            }
        }
        return lines
    }
}
