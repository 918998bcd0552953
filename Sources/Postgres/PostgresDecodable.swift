import Foundation

/// A type that can be built from a result value in PostgreSQL's text output format.
///
/// Conformances throw ``PostgresError`` with kind `.decoding`; their messages never
/// contain the value itself (it may be sensitive).
public protocol PostgresDecodable {
    init(postgresText: String) throws
}

extension PostgresError {
    static func decoding(_ type: Any.Type, _ reason: String? = nil) -> PostgresError {
        var message = "cannot decode value as \(type)"
        if let reason { message += ": \(reason)" }
        return PostgresError(kind: .decoding, message: message)
    }
}

extension String: PostgresDecodable {
    public init(postgresText: String) throws { self = postgresText }
}

extension Int: PostgresDecodable {
    public init(postgresText: String) throws {
        guard let value = Int(postgresText) else { throw PostgresError.decoding(Int.self) }
        self = value
    }
}

extension Int64: PostgresDecodable {
    public init(postgresText: String) throws {
        guard let value = Int64(postgresText) else { throw PostgresError.decoding(Int64.self) }
        self = value
    }
}

extension Int32: PostgresDecodable {
    public init(postgresText: String) throws {
        guard let value = Int32(postgresText) else { throw PostgresError.decoding(Int32.self) }
        self = value
    }
}

extension Int16: PostgresDecodable {
    public init(postgresText: String) throws {
        guard let value = Int16(postgresText) else { throw PostgresError.decoding(Int16.self) }
        self = value
    }
}

extension Bool: PostgresDecodable {
    public init(postgresText: String) throws {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: throw PostgresError.decoding(Bool.self)
        }
    }
}

extension Double: PostgresDecodable {
    public init(postgresText: String) throws {
        switch postgresText {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(postgresText) else { throw PostgresError.decoding(Double.self) }
            self = value
        }
    }
}

/// Parses `timestamptz` / `timestamp` / `date` output in DateStyle ISO (see ``PostgresTimestamp``).
extension Date: PostgresDecodable {
    public init(postgresText: String) throws {
        self = try PostgresTimestamp.parse(postgresText)
    }
}

extension UUID: PostgresDecodable {
    public init(postgresText: String) throws {
        guard let value = UUID(uuidString: postgresText) else { throw PostgresError.decoding(UUID.self) }
        self = value
    }
}

/// Parses `bytea` hex output (`\x0a1b…`).
extension Data: PostgresDecodable {
    public init(postgresText: String) throws {
        self = Data(try PostgresBytea.parseHex(postgresText))
    }
}
