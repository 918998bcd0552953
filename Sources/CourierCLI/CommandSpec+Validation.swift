extension CommandSpec {
    /// Mistakes in this declaration tree, one sentence each, empty when the tree
    /// is sound: duplicate or reserved names, positional arguments in the wrong
    /// order, groups with non-global arguments, defaults outside the allowed
    /// values, constraints naming undeclared arguments. Run it from a test.
    public func validationProblems() -> [String] {
        problems(path: [name], inherited: [])
    }

    private func problems(path: [String], inherited: [ArgumentSpec]) -> [String] {
        let here = path.joined(separator: " ")
        var problems: [String] = []
        if abstract.isEmpty { problems.append("\(here): empty abstract") }
        let all = inherited + arguments
        var longs: Set<String> = [], shorts: Set<Character> = []
        for argument in all {
            if !longs.insert(argument.long).inserted {
                problems.append("\(here): '\(argument.long)' declared twice")
            }
            if let short = argument.short, !shorts.insert(short).inserted {
                problems.append("\(here): short '-\(short)' declared twice")
            }
        }
        for argument in arguments {
            let name = "\(here) \(argument.displayName)"
            if argument.long.isEmpty || argument.long.hasPrefix("-") || argument.long.contains("=") {
                problems.append("\(name): long name must be non-empty without dashes or '='")
            }
            if argument.long == "help" || argument.short == "h" {
                problems.append("\(name): 'help' and '-h' are reserved")
            }
            if version != nil, path.count == 1, argument.long == "version" {
                problems.append("\(name): 'version' is reserved when the root has a version")
            }
            if argument.help.isEmpty { problems.append("\(name): empty help") }
            if let defaultValue = argument.defaultValue, let allowed = argument.allowedValues,
               !allowed.contains(defaultValue) {
                problems.append("\(name): default '\(defaultValue)' is not an allowed value")
            }
            if argument.implicitValue != nil, !argument.isOption {
                problems.append("\(name): only options can have an implicit value")
            }
            if argument.isPositional, argument.environmentVariable != nil || argument.defaultValue != nil
                || argument.short != nil || argument.isGlobal {
                problems.append("\(name): positional arguments take no environment variable, default, short name or global scope")
            }
            if argument.isFlag, argument.repeatable || argument.required || argument.defaultValue != nil
                || argument.allowedValues != nil {
                problems.append("\(name): flags cannot be repeatable, required, defaulted or restricted")
            }
            if isGroup, !argument.isGlobal {
                problems.append("\(name): a command with subcommands may only declare global arguments")
            }
            if let group = argument.exclusiveGroup, arguments.filter({ $0.exclusiveGroup == group }).count < 2 {
                problems.append("\(name): exclusive group '\(group)' has only one member")
            }
        }
        let positionals = arguments.filter(\.isPositional)
        for (index, positional) in positionals.enumerated() {
            if positional.repeatable, index != positionals.count - 1 {
                problems.append("\(here) \(positional.displayName): a repeatable positional argument must come last")
            }
            if positional.required, index > 0, !positionals[index - 1].required {
                problems.append("\(here) \(positional.displayName): a required positional argument cannot follow an optional one")
            }
        }
        for constraint in constraints {
            let names: [String]
            switch constraint {
            case .atLeastOne(let list): names = list
            case .conflicts(let first, let others): names = [first] + others
            }
            for name in names where !all.contains(where: { $0.long == name }) {
                problems.append("\(here): constraint names undeclared argument '\(name)'")
            }
        }
        var subcommandNames: Set<String> = []
        for subcommand in subcommands {
            if !subcommandNames.insert(subcommand.name).inserted || subcommand.name == "help" {
                problems.append("\(here): subcommand '\(subcommand.name)' is duplicated or reserved")
            }
            problems += subcommand.problems(
                path: path + [subcommand.name],
                inherited: inherited + arguments.filter(\.isGlobal))
        }
        return problems
    }
}
