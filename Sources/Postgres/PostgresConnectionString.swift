import CLibPQ
import Foundation

/// Parses and renders libpq connection strings (URI and key=value forms), using libpq's
/// own parser (`PQconninfoParse`), so every form libpq accepts is understood.
public enum PostgresConnectionString {
    /// The parameters set in `connectionString`, in libpq's keyword order.
    /// `""` gives `[]`; a bare word without `=` (and not a URI) is taken as `dbname`.
    /// Throws `.connection` with libpq's message when the string is malformed.
    public static func parse(_ connectionString: String) throws -> [(key: String, value: String)] {
        let trimmed = connectionString.trimmingSpaces()
        if trimmed.isEmpty { return [] }
        if !trimmed.contains("="), !trimmed.hasPrefix("postgresql://"), !trimmed.hasPrefix("postgres://") {
            return [("dbname", trimmed)]
        }
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            var message = "invalid connection string"
            if let errorMessage {
                // libpq quotes parts of the string (the whole URI, a bad token): never the password.
                message += ": " + redactingPasswords(of: connectionString, in: String(cString: errorMessage).trimmingSpaces())
                PQfreemem(errorMessage)
            }
            throw PostgresError(kind: .connection, message: message, isConnectionLoss: false)
        }
        defer { PQconninfoFree(options) }
        var result: [(key: String, value: String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                result.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        return result
    }

    /// Why `text` cannot be a connection string, or nil: it must be a `postgresql://` /
    /// `postgres://` URI, a key=value conninfo, or a bare database name (letters, digits,
    /// `_`, `-`, `.`); anything else (`not a url`) is a mistake, not a database name.
    public static func problem(_ text: String) -> String? {
        let trimmed = text.trimmingSpaces()
        if trimmed.isEmpty || trimmed.contains("=") || trimmed.hasPrefix("postgresql://") || trimmed.hasPrefix("postgres://") {
            return nil
        }
        let bareName = trimmed.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "_-.".unicodeScalars.contains($0) }
        return bareName ? nil : "'\(redactingPasswords(of: trimmed, in: trimmed))' is neither a postgresql:// URI nor key=value conninfo (such as host=db.internal dbname=courier)"
    }

    /// What a password is replaced with in messages.
    public static let passwordPlaceholder = "***"

    /// `message` with every password written in `connectionString` replaced by
    /// ``passwordPlaceholder``: for messages about a connection string, which libpq words by
    /// quoting parts of it (the whole URI after a bad IPv6 host, a bad percent-encoded
    /// token) and which may show a mistyped string whole.
    ///
    /// The passwords are found without libpq, so that a string libpq cannot parse is
    /// covered too, generously (a little too much hidden is better than a password shown):
    /// - a URI (anything with `://`): the password of its user information, read as libpq
    ///   reads it (up to the first `@` before a `/`) and also up to the last `@`, and each
    ///   piece of it between `/`s (libpq then reads them as a port or a database name); and
    ///   the value of every `password=` query parameter;
    /// - key=value: the value after every `password` keyword, with or without `=`,
    ///   quoted (`'…'`, `\'` and `\\` escapes) or not;
    ///
    /// each as written and percent-decoded. Every occurrence of a password of 4 or more
    /// characters is replaced; a shorter one only where it stands alone (no letter or digit
    /// beside it), or every `p` of "postgresql" would go with the password `p`.
    public static func redactingPasswords(of connectionString: String, in message: String) -> String {
        var text = message
        for password in passwords(in: connectionString).sorted(by: { $0.count > $1.count }) where text.contains(password) {
            text = password.count >= 4 ? text.replacingOccurrences(of: password, with: passwordPlaceholder)
                                       : replacingStandalone(password, in: text)
        }
        return text
    }

    /// `text` with each occurrence of `word` that has no letter or digit on either side replaced.
    private static func replacingStandalone(_ word: String, in text: String) -> String {
        func isWordCharacter(_ character: Character?) -> Bool { character.map { $0.isLetter || $0.isNumber } ?? false }
        var out = ""
        var rest = text[...]
        while let found = rest.range(of: word) {
            let before = found.lowerBound == text.startIndex ? nil : text[text.index(before: found.lowerBound)]
            let after = found.upperBound == text.endIndex ? nil : text[found.upperBound]
            out += rest[..<found.lowerBound]
            out += isWordCharacter(before) || isWordCharacter(after) ? String(rest[found]) : passwordPlaceholder
            rest = rest[found.upperBound...]
        }
        return out + rest
    }

    /// The passwords written in `text` (see ``redactingPasswords(of:in:)``), each form once.
    static func passwords(in text: String) -> [String] {
        var found: [Substring] = []
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            var userInformation: [Substring] = []
            if let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@" { userInformation.append(rest[..<end]) }
            if let last = rest.lastIndex(of: "@") { userInformation.append(rest[..<last]) }
            for information in userInformation {
                guard let colon = information.firstIndex(of: ":") else { continue }
                let password = information[information.index(after: colon)...]
                found.append(password)
                // An unescaped / ends libpq's user information early: the pieces become a port, a database name.
                found += password.split(separator: "/")
            }
            if let question = rest.firstIndex(of: "?") {
                for pair in rest[rest.index(after: question)...].split(separator: "&") {
                    let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    if parts.count == 2, percentDecoded(parts[0]).trimmingSpaces() == "password" { found.append(parts[1]) }
                }
            }
        }
        found += keywordPasswords(in: text)
        var result: [String] = []
        for candidate in found where !candidate.isEmpty {
            for form in [String(candidate), percentDecoded(candidate)] where !form.isEmpty && !result.contains(form) {
                result.append(form)
            }
        }
        return result
    }

    /// The values after each `password` keyword of a key=value string: as written, and unquoted.
    private static func keywordPasswords(in text: String) -> [Substring] {
        var found: [Substring] = []
        var search = text.startIndex
        while let keyword = text.range(of: "password", range: search..<text.endIndex) {
            search = keyword.upperBound
            // A keyword starts the string or follows white space.
            guard keyword.lowerBound == text.startIndex || text[text.index(before: keyword.lowerBound)].isWhitespace else { continue }
            var index = keyword.upperBound
            func skipSpaces() { while index < text.endIndex, text[index].isWhitespace { index = text.index(after: index) } }
            skipSpaces()
            if index < text.endIndex, text[index] == "=" { index = text.index(after: index) }
            skipSpaces()
            guard index < text.endIndex else { continue }
            if text[index] == "'" {
                let start = text.index(after: index)
                var end = start
                var unquoted = ""
                while end < text.endIndex, text[end] != "'" {
                    if text[end] == "\\", text.index(after: end) < text.endIndex { end = text.index(after: end) }
                    unquoted.append(text[end])
                    end = text.index(after: end)
                }
                found.append(text[start..<end])
                found.append(Substring(unquoted))
            } else {
                let end = text[index...].firstIndex(where: \.isWhitespace) ?? text.endIndex
                found.append(text[index..<end])
            }
        }
        return found
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        var pending: [UInt8] = []
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            pending = [byte]
            guard let high = bytes.next() else { out += pending; break }
            pending.append(high)
            guard let low = bytes.next() else { out += pending; break }
            pending.append(low)
            if let h = hexValue(high), let l = hexValue(low) { out.append(h << 4 | l) } else { out += pending }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Renders parameters as a key=value conninfo string, quoting values as libpq
    /// requires (`'…'` with `\'` and `\\`).
    public static func render(_ parameters: [(key: String, value: String)]) -> String {
        parameters.map { "\($0.key)=\(quote($0.value))" }.joined(separator: " ")
    }

    /// `connectionString` with the password replaced by `***` (or a placeholder text
    /// when it cannot be parsed). Safe to log.
    public static func redacted(_ connectionString: String) -> String {
        guard let parameters = try? parse(connectionString) else { return "<unparsable connection string>" }
        if parameters.isEmpty { return "<libpq defaults and PG* environment>" }
        return render(parameters.map { $0.key == "password" ? ($0.key, "***") : $0 })
    }

    static func quote(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { scalar in
            scalar != " " && scalar != "'" && scalar != "\\" && scalar != "\t" && scalar != "\n" && scalar != "\r"
        }
        if plain { return value }
        var text = "'"
        for scalar in value.unicodeScalars {
            if scalar == "'" || scalar == "\\" { text.unicodeScalars.append("\\") }
            text.unicodeScalars.append(scalar)
        }
        return text + "'"
    }
}

extension String {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
