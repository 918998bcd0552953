import Foundation

/// `--name value` options of one courier-bench subcommand. Unknown names are refused
/// so a typo in bench/run.sh cannot silently change a figure.
struct BenchOptions {
    private var values: [String: String] = [:]
    private let known: Set<String>

    init(_ arguments: ArraySlice<String>, known: [String]) throws {
        self.known = Set(known)
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--") else { throw BenchError("unexpected argument '\(argument)'") }
            let name = String(argument.dropFirst(2))
            guard self.known.contains(name) else {
                throw BenchError("unknown option --\(name) (expected one of: \(known.map { "--" + $0 }.joined(separator: ", ")))")
            }
            guard let value = iterator.next() else { throw BenchError("--\(name) needs a value") }
            values[name] = value
        }
    }

    /// The value given for `name`, or nil when the option was not given.
    func optional(_ name: String) -> String? {
        precondition(known.contains(name), "option --\(name) is not declared")
        return values[name]
    }

    func string(_ name: String, default fallback: String) -> String {
        precondition(known.contains(name), "option --\(name) is not declared")
        return values[name] ?? fallback
    }

    func int(_ name: String, default fallback: Int) throws -> Int {
        let text = string(name, default: String(fallback))
        guard let value = Int(text), value >= 0 else { throw BenchError("--\(name): '\(text)' is not a whole number") }
        return value
    }

    func intList(_ name: String, default fallback: [Int]) throws -> [Int] {
        let text = string(name, default: fallback.map(String.init).joined(separator: ","))
        let parts = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !parts.isEmpty, parts.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw BenchError("--\(name): '\(text)' is not a comma-separated list of positive numbers")
        }
        return parts.compactMap { $0 }
    }
}

/// A benchmark failure, with a message saying what went wrong.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
