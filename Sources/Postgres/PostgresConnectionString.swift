import CLibPQ

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
                message += ": " + String(cString: errorMessage).trimmingSpaces()
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
        return bareName ? nil : "'\(trimmed)' is neither a postgresql:// URI nor key=value conninfo (such as host=db.internal dbname=courier)"
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
