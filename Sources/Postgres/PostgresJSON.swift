import Foundation

/// Raw JSON text, bound as `jsonb` (OID 3802) and decoded from `json`/`jsonb` columns.
///
/// The text is sent as is; the server validates it. Use ``init(encoding:encoder:)`` and
/// ``decode(_:decoder:)`` to go through `Codable`.
public struct PostgresJSON: Sendable, Hashable, PostgresEncodable, PostgresDecodable {
    /// The JSON document as text.
    public var rawJSON: String

    public init(rawJSON: String) { self.rawJSON = rawJSON }
    public init(_ rawJSON: String) { self.rawJSON = rawJSON }

    /// Encodes `value` with `JSONEncoder`.
    public init<T: Encodable>(encoding value: T, encoder: JSONEncoder = JSONEncoder()) throws {
        self.rawJSON = String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes the document with `JSONDecoder`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(T.self, from: Data(rawJSON.utf8))
    }

    public var postgresText: String? { rawJSON }
    public static var postgresTypeOID: UInt32 { PostgresTypeOID.jsonb }

    public init(postgresText: String) throws { self.rawJSON = postgresText }
}
