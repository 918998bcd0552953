import Foundation

/// An element type whose Swift arrays bind as a PostgreSQL array.
/// (`UInt8` is the exception: `[UInt8]` binds as `bytea`.)
public protocol PostgresArrayEncodable: Sendable {
    /// The OID of the array type (e.g. `int8[]` = 1016).
    static var postgresArrayTypeOID: UInt32 { get }
    /// The text form of an array of this element type.
    static func postgresArrayText(_ elements: [Self]) -> String
}

extension PostgresArrayEncodable where Self: PostgresEncodable {
    public static func postgresArrayText(_ elements: [Self]) -> String {
        PostgresArrayLiteral.format(elements.map(\.postgresText))
    }
}

/// An element type whose Swift arrays decode from a PostgreSQL array.
/// (`[UInt8]` decodes from `bytea`.)
public protocol PostgresArrayDecodable {
    static func postgresDecodeArray(_ text: String) throws -> [Self]
}

extension PostgresArrayDecodable where Self: PostgresDecodable {
    public static func postgresDecodeArray(_ text: String) throws -> [Self] {
        try PostgresArrayLiteral.parse(text).map { element in
            guard let element else {
                throw PostgresError(kind: .decoding, message: "array contains NULL; decode as [\(Self.self)?]")
            }
            return try Self(postgresText: element)
        }
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayEncodable {
    public var postgresText: String? { Element.postgresArrayText(self) }
    public static var postgresTypeOID: UInt32 { Element.postgresArrayTypeOID }
}

extension Array: PostgresDecodable where Element: PostgresArrayDecodable {
    public init(postgresText: String) throws {
        self = try Element.postgresDecodeArray(postgresText)
    }
}

extension String: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.textArray }
}
extension Int: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.int8Array }
}
extension Int64: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.int8Array }
}
extension Int32: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.int4Array }
}
extension Int16: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.int2Array }
}
extension Bool: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.boolArray }
}
extension Double: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.float8Array }
}
extension Date: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.timestamptzArray }
}
extension UUID: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.uuidArray }
}
extension Data: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.byteaArray }
}
extension PostgresJSON: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.jsonbArray }
}

/// `[T?]`: `nil` elements are NULL.
extension Optional: PostgresArrayEncodable where Wrapped: PostgresArrayEncodable & PostgresEncodable {
    public static var postgresArrayTypeOID: UInt32 { Wrapped.postgresArrayTypeOID }
}

extension Optional: PostgresArrayDecodable where Wrapped: PostgresDecodable {
    public static func postgresDecodeArray(_ text: String) throws -> [Wrapped?] {
        try PostgresArrayLiteral.parse(text).map { element in
            try element.map { try Wrapped(postgresText: $0) }
        }
    }
}

/// `[UInt8]` is `bytea` (hex text form), not an array.
extension UInt8: PostgresArrayEncodable, PostgresArrayDecodable {
    public static var postgresArrayTypeOID: UInt32 { PostgresTypeOID.bytea }
    public static func postgresArrayText(_ elements: [UInt8]) -> String { PostgresBytea.hexText(elements) }
    public static func postgresDecodeArray(_ text: String) throws -> [UInt8] { try PostgresBytea.parseHex(text) }
}
