/// Parses command lines against a ``CommandSpec`` tree.
///
/// Accepted forms: `--flag`, `--opt value`, `--opt=value`, `-n 5`, `-n5`,
/// bundled short flags (`-ab`), repeated options, `--` to end options,
/// positional lists, subcommands, `help [CMD...]`, and `--help`/`-h` anywhere
/// before `--`. An option's value is the next word unless that word starts with
/// `--` (so negative numbers work: `--priority -5`); use `--opt=--value` for
/// such values.
public enum CommandLineParser {
    /// Parses `arguments` (without the program name) against `root`.
    ///
    /// `environment` supplies fallbacks for arguments that declare an
    /// environment variable; pass `ProcessInfo.processInfo.environment` in
    /// executables and a literal dictionary in tests.
    public static func parse(
        _ arguments: [String],
        root: CommandSpec,
        environment: [String: String] = [:]
    ) throws(UsageError) -> ParseResult {
        if let path = helpRequest(in: arguments, root: root) {
            return .help(HelpFormatter.help(root: root, path: path) ?? HelpFormatter.help(root: root, path: [])!)
        }
        var parser = Parser(root: root, environment: environment)
        return try parser.parse(arguments)
    }

    /// When `--help` or `-h` appears before `--`, the path of the command whose
    /// help is wanted, found by walking subcommand names and skipping option values.
    static func helpRequest(in arguments: [String], root: CommandSpec) -> [String]? {
        let options = arguments.prefix { $0 != "--" }
        guard options.contains("--help") || options.contains("-h") else { return nil }
        var chain = [root]
        var index = 0
        while index < options.count {
            let token = options[options.startIndex + index]
            index += 1
            let active = Parser.activeArguments(chain)
            if token.hasPrefix("--") {
                let name = token.dropFirst(2)
                guard !name.contains("="),
                      let spec = active.first(where: { $0.long == name && $0.isOption }) else { continue }
                if spec.implicitValue == nil { index += 1 }
            } else if token.hasPrefix("-"), token.count > 1 {
                let letters = Array(token.dropFirst())
                if let last = letters.last, letters.count == 1,
                   let spec = active.first(where: { $0.short == last && $0.isOption }), spec.implicitValue == nil {
                    index += 1
                }
            } else if let next = chain[chain.count - 1].subcommand(named: token) {
                chain.append(next)
            }
        }
        return chain.dropFirst().map(\.name)
    }
}

/// The state of one parse.
struct Parser {
    let root: CommandSpec
    let environment: [String: String]
    var chain: [CommandSpec]
    var given: [String: [String]] = [:]
    var sources: [String: ParsedCommand.Source] = [:]
    /// Keys of the arguments given, in the order they first appeared.
    var order: [String] = []
    var words: [String] = []
    /// Where in `order` the positional arguments go: where the first word appeared.
    var wordsOrderIndex: Int?

    init(root: CommandSpec, environment: [String: String]) {
        self.root = root
        self.environment = environment
        self.chain = [root]
    }

    var commandPath: [String] { chain.map(\.name) }
    var current: CommandSpec { chain[chain.count - 1] }
    var active: [ArgumentSpec] { Self.activeArguments(chain) }

    /// The global arguments of every ancestor, then the command's own.
    static func activeArguments(_ chain: [CommandSpec]) -> [ArgumentSpec] {
        chain.dropLast().flatMap { $0.arguments.filter(\.isGlobal) } + chain[chain.count - 1].arguments
    }

    mutating func parse(_ arguments: [String]) throws(UsageError) -> ParseResult {
        if arguments.isEmpty, root.isGroup {
            return .help(HelpFormatter.help(root: root, path: [])!)
        }
        var index = 0
        var onlyWords = false
        while index < arguments.count {
            let token = arguments[index]
            index += 1
            if onlyWords {
                appendWord(token)
            } else if token == "--" {
                onlyWords = true
            } else if token == "--version", chain.count == 1, let version = root.version {
                return .version(version)
            } else if token.hasPrefix("--") {
                try takeLong(token, arguments, &index)
            } else if token.hasPrefix("-"), token.count > 1 {
                try takeShort(token, arguments, &index)
            } else if current.isGroup {
                if let next = current.subcommand(named: token) {
                    chain.append(next)
                } else if token == "help" {
                    return .help(try helpText(for: Array(arguments[index...])))
                } else {
                    throw unknownCommand(token, among: current.subcommands.map(\.name) + ["help"])
                }
            } else {
                appendWord(token)
            }
        }
        return .run(try finish())
    }

    mutating func appendWord(_ word: String) {
        if wordsOrderIndex == nil { wordsOrderIndex = order.count }
        words.append(word)
    }

    // MARK: - Options

    mutating func takeLong(_ token: String, _ arguments: [String], _ index: inout Int) throws(UsageError) {
        let body = token.dropFirst(2)
        let name: String
        let inline: String?
        if let equals = body.firstIndex(of: "=") {
            name = String(body[..<equals])
            inline = String(body[body.index(after: equals)...])
        } else {
            name = String(body)
            inline = nil
        }
        guard let spec = active.first(where: { $0.long == name && !$0.isPositional }) else {
            let candidates = active.filter { !$0.isPositional }.map(\.long) + ["help"]
            var message = "unknown option"
            if let suggestion = Suggestions.best(for: name, among: candidates) {
                message += "; did you mean --\(suggestion)?"
            } else if current.isGroup, Self.declaredBelow(current, name) {
                message += " for '\(commandPath.joined(separator: " "))'; give it after the command's name"
            }
            throw error(.unknownOption, field: "--" + name, message)
        }
        if spec.isFlag {
            if let inline {
                throw error(.unexpectedValue, field: spec.displayName, "takes no value, got '\(inline)'")
            }
            try record(spec, value: nil)
            return
        }
        guard let value = inline ?? nextValue(for: spec, arguments, &index) else {
            throw error(.missingValue, field: spec.displayName, "missing value (expected \(spec.valueName ?? "a value"))")
        }
        try record(spec, value: value)
    }

    mutating func takeShort(_ token: String, _ arguments: [String], _ index: inout Int) throws(UsageError) {
        let letters = Array(token.dropFirst())
        var position = 0
        while position < letters.count {
            let letter = letters[position]
            position += 1
            guard let spec = active.first(where: { $0.short == letter }) else {
                throw error(.unknownOption, field: "-\(letter)", "unknown option")
            }
            if spec.isFlag {
                try record(spec, value: nil)
                continue
            }
            var rest = String(letters[position...])
            if rest.hasPrefix("=") { rest.removeFirst() }
            if !rest.isEmpty {
                try record(spec, value: rest)
                return
            }
            guard let value = nextValue(for: spec, arguments, &index) else {
                throw error(.missingValue, field: spec.displayName, "missing value (expected \(spec.valueName ?? "a value"))")
            }
            try record(spec, value: value)
            return
        }
    }

    /// Whether some command below `command` declares `--name`.
    static func declaredBelow(_ command: CommandSpec, _ name: String) -> Bool {
        command.subcommands.contains { sub in
            sub.arguments.contains { $0.long == name && !$0.isPositional } || declaredBelow(sub, name)
        }
    }

    /// The word after an option, when it can be the option's value.
    func nextValue(for spec: ArgumentSpec, _ arguments: [String], _ index: inout Int) -> String? {
        if index < arguments.count {
            let candidate = arguments[index]
            let acceptable = spec.implicitValue == nil
                ? !candidate.hasPrefix("--")
                : (!candidate.hasPrefix("-") || candidate == "-")
            if acceptable {
                index += 1
                return candidate
            }
        }
        return spec.implicitValue
    }

    mutating func record(_ spec: ArgumentSpec, value: String?) throws(UsageError) {
        if let value {
            try checkAllowed(spec, value, field: spec.displayName)
        }
        if given[spec.long] != nil {
            if spec.isFlag { return }
            if !spec.repeatable {
                throw error(.duplicateOption, field: spec.displayName, "given more than once")
            }
        } else {
            order.append(spec.long)
            sources[spec.long] = .commandLine
        }
        given[spec.long, default: []].append(contentsOf: value.map { [$0] } ?? [])
    }

    func checkAllowed(_ spec: ArgumentSpec, _ value: String, field: String) throws(UsageError) {
        guard let allowed = spec.allowedValues, !allowed.contains(value) else { return }
        var message = "expected one of \(allowed.joined(separator: ", ")), got '\(value)'"
        if let suggestion = Suggestions.best(for: value, among: allowed) {
            message += "; did you mean \(suggestion)?"
        }
        throw error(.invalidValue, field: field, message)
    }

    // MARK: - After the last word

    mutating func finish() throws(UsageError) -> ParsedCommand {
        if current.isGroup {
            if let word = words.first {
                throw error(.unexpectedArgument, field: nil, "unexpected argument '\(word)'")
            }
            let names = current.subcommands.map(\.name).joined(separator: ", ")
            throw error(.missingCommand, field: nil,
                        "missing command for '\(commandPath.joined(separator: " "))'; expected one of \(names)")
        }
        let active = self.active
        try assignPositionals(active)
        try applyEnvironment(active)
        try checkExclusions(active)
        applyDefaults(active)
        try checkRequired(active)

        var entries: [String: ParsedCommand.Entry] = [:]
        for (key, values) in given {
            entries[key] = ParsedCommand.Entry(values: values, source: sources[key] ?? .commandLine)
        }
        return ParsedCommand(
            path: Array(commandPath.dropFirst()), commandPath: commandPath,
            arguments: active, entries: entries)
    }

    mutating func assignPositionals(_ active: [ArgumentSpec]) throws(UsageError) {
        var next = 0
        var insertAt = wordsOrderIndex ?? order.count
        for spec in active where spec.isPositional && next < words.count {
            let taken = spec.repeatable ? Array(words[next...]) : [words[next]]
            next += taken.count
            given[spec.long] = taken
            sources[spec.long] = .commandLine
            order.insert(spec.long, at: insertAt)
            insertAt += 1
        }
        if next < words.count {
            throw error(.unexpectedArgument, field: nil, "unexpected argument '\(words[next])'")
        }
    }

    mutating func applyEnvironment(_ active: [ArgumentSpec]) throws(UsageError) {
        for spec in active where !spec.isPositional && given[spec.long] == nil {
            guard let variable = spec.environmentVariable, let raw = environment[variable], !raw.isEmpty else {
                continue
            }
            if let group = spec.exclusiveGroup,
               active.contains(where: { $0.exclusiveGroup == group && sources[$0.long] == .commandLine }) {
                continue
            }
            if spec.isFlag {
                switch raw.lowercased() {
                case "1", "true", "yes", "on":
                    given[spec.long] = []
                case "0", "false", "no", "off":
                    continue
                default:
                    throw error(.invalidValue, field: variable,
                                "expected true or false (1/0, yes/no, on/off), got '\(raw)'")
                }
            } else {
                try checkAllowed(spec, raw, field: variable)
                given[spec.long] = [raw]
            }
            sources[spec.long] = .environment(variable)
            order.append(spec.long)
        }
    }

    /// How an error names the argument with this key, given where its value came from.
    func field(_ key: String, _ active: [ArgumentSpec]) -> String {
        if case .environment(let variable) = sources[key] { return variable }
        return active.first { $0.long == key }?.displayName ?? key
    }

    func checkExclusions(_ active: [ArgumentSpec]) throws(UsageError) {
        var firstInGroup: [String: String] = [:]
        for key in order {
            guard let group = active.first(where: { $0.long == key })?.exclusiveGroup else { continue }
            if let first = firstInGroup[group] {
                throw error(.conflict, field: field(key, active), "cannot be combined with \(field(first, active))")
            }
            firstInGroup[group] = key
        }
        for case .conflicts(let name, let others) in current.constraints where sources[name] != nil {
            for other in others where sources[other] != nil {
                let (earlier, later) = order.firstIndex(of: name)! < order.firstIndex(of: other)! ? (name, other) : (other, name)
                throw error(.conflict, field: field(later, active), "cannot be combined with \(field(earlier, active))")
            }
        }
    }

    mutating func applyDefaults(_ active: [ArgumentSpec]) {
        for spec in active where given[spec.long] == nil {
            guard let value = spec.defaultValue else { continue }
            if let group = spec.exclusiveGroup,
               active.contains(where: { $0.exclusiveGroup == group && given[$0.long] != nil }) {
                continue
            }
            given[spec.long] = [value]
            sources[spec.long] = .defaultValue
        }
    }

    func checkRequired(_ active: [ArgumentSpec]) throws(UsageError) {
        for spec in active where spec.required && given[spec.long] == nil {
            if spec.isPositional {
                throw error(.missingArgument, field: spec.displayName, "missing argument")
            }
            var message = "missing required option"
            if let variable = spec.environmentVariable {
                message += " (or set \(variable))"
            }
            throw error(.missingArgument, field: spec.displayName, message)
        }
        for case .atLeastOne(let names) in current.constraints {
            let specified = names.contains { name in
                switch sources[name] {
                case .commandLine, .environment: return true
                case .defaultValue, nil: return false
                }
            }
            if !specified {
                let display = names.map { name in
                    guard let spec = active.first(where: { $0.long == name }) else { return name }
                    return spec.isPositional && spec.repeatable ? spec.displayName + "..." : spec.displayName
                }
                throw error(.missingArgument, field: nil, "expected one of \(display.joined(separator: ", "))")
            }
        }
    }

    // MARK: - Help and errors

    /// The help text for `help WORD...`, resolved from the current command.
    func helpText(for words: [String]) throws(UsageError) -> String {
        var chain = self.chain
        for word in words where !word.hasPrefix("-") {
            let command = chain[chain.count - 1]
            guard let next = command.subcommand(named: word) else {
                var message = "unknown command '\(word)'"
                if command.isGroup {
                    message += " for '\(chain.map(\.name).joined(separator: " "))'"
                    if let suggestion = Suggestions.best(for: word, among: command.subcommands.map(\.name)) {
                        message += "; did you mean '\(suggestion)'?"
                    }
                }
                throw UsageError(code: .unknownCommand, field: nil, message: message, commandPath: chain.map(\.name))
            }
            chain.append(next)
        }
        return HelpFormatter.help(for: chain)
    }

    func unknownCommand(_ word: String, among names: [String]) -> UsageError {
        var message = "unknown command '\(word)' for '\(commandPath.joined(separator: " "))'"
        if let suggestion = Suggestions.best(for: word, among: names) {
            message += "; did you mean '\(suggestion)'?"
        }
        return error(.unknownCommand, field: nil, message)
    }

    func error(_ code: UsageError.Code, field: String?, _ message: String) -> UsageError {
        UsageError(code: code, field: field, message: message, commandPath: commandPath)
    }
}
