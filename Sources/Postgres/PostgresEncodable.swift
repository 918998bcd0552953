import Foundation

/// A value that can be sent as a bound parameter, in PostgreSQL's text format.
///
/// `postgresText == nil` sends SQL NULL. `postgresTypeOID` is the parameter type given
/// to the server; `0` lets the server infer it from the statement.
public protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input format, or `nil` for NULL.
    var postgresText: String? { get }
    /// The parameter's type OID (`0` = let the server infer).
    static var postgresTypeOID: UInt32 { get }
}

/// Well-known type OIDs used by the built-in conformances.
public enum PostgresTypeOID {
    public static let unspecified: UInt32 = 0
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let float8: UInt32 = 701
    public static let boolArray: UInt32 = 1000
    public static let byteaArray: UInt32 = 1001
    public static let int2Array: UInt32 = 1005
    public static let int4Array: UInt32 = 1007
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
    public static let float8Array: UInt32 = 1022
    public static let timestamptz: UInt32 = 1184
    public static let timestamptzArray: UInt32 = 1185
    public static let uuid: UInt32 = 2950
    public static let uuidArray: UInt32 = 2951
    public static let jsonb: UInt32 = 3802
    public static let jsonbArray: UInt32 = 3807
}

// Strings are sent untyped (OID 0) so the server can use them for text, varchar,
// jsonb, enum or timestamp parameters alike.
extension String: PostgresEncodable {
    public var postgresText: String? { self }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.unspecified }
}

// Int and Int64 are int8. A function parameter declared `int` (int4) needs `$1::int`
// in the SQL or an `Int32` value: PostgreSQL does not narrow int8 implicitly there.
extension Int: PostgresEncodable {
    public var postgresText: String? { String(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.int8 }
}

extension Int64: PostgresEncodable {
    public var postgresText: String? { String(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.int8 }
}

extension Int32: PostgresEncodable {
    public var postgresText: String? { String(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.int4 }
}

extension Int16: PostgresEncodable {
    public var postgresText: String? { String(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.int2 }
}

extension Bool: PostgresEncodable {
    public var postgresText: String? { self ? "true" : "false" }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.bool }
}

extension Double: PostgresEncodable {
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return "\(self)"  // shortest representation that round-trips
    }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.float8 }
}

/// Sent as `timestamptz` in UTC with microsecond precision, e.g. `2026-11-29 20:23:52.123456+00`.
extension Date: PostgresEncodable {
    public var postgresText: String? { PostgresTimestamp.format(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.timestamptz }
}

extension UUID: PostgresEncodable {
    /// The canonical lowercase form, written from the bytes (``UUIDText``): every claim and
    /// acknowledgement binds the worker's id, and `uuidString` formats each byte with `snprintf`.
    public var postgresText: String? {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: UUIDText.length) { out in
                UUIDText.write(bytes, into: UnsafeMutableRawBufferPointer(out))
            }
        }
    }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.uuid }
}

/// Sent as `bytea` in hex form (`\x0a1b…`).
extension Data: PostgresEncodable {
    public var postgresText: String? { PostgresBytea.hexText(self) }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.bytea }
}

/// `nil` is SQL NULL; the type OID is the wrapped type's.
extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresText: String? {
        switch self {
        case .none: return nil
        case .some(let value): return value.postgresText
        }
    }
    public static var postgresTypeOID: UInt32 { Wrapped.postgresTypeOID }
}
