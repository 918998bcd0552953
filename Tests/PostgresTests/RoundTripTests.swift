import CourierTestSupport
import Foundation
import Postgres
import Testing

@Suite struct RoundTripTests {
    /// Sends `value` as a bind, casts it on the server and decodes it back.
    private func echo<T: PostgresEncodable & PostgresDecodable>(_ value: T, _ cast: StaticString, on connection: PostgresConnection) throws -> T? {
        let sql = "select $1::\(cast)"
        let row = try connection.query(PostgresQuery(unsafeSQL: sql, binds: [value])).rows[0]
        return try row.decode(0, as: T?.self)
    }

    @Test func scalarsRoundTrip() throws {
        try withConnection { connection, _ in
            try #expect(echo(Int.max, "int8", on: connection) == Int.max)
            try #expect(echo(Int64.min, "int8", on: connection) == Int64.min)
            try #expect(echo(Int32(-7), "int4", on: connection) == -7)
            try #expect(echo(Int16(300), "int2", on: connection) == 300)
            try #expect(echo(true, "bool", on: connection) == true)
            try #expect(echo(false, "bool", on: connection) == false)
            try #expect(echo(0.1, "float8", on: connection) == 0.1)
            try #expect(echo(-1.5e-300, "float8", on: connection) == -1.5e-300)
            try #expect(echo(Double.infinity, "float8", on: connection) == .infinity)
            try #expect(echo(Double.nan, "float8", on: connection)?.isNaN == true)
            let uuid = UUID()
            try #expect(echo(uuid, "uuid", on: connection) == uuid)
            let bytes = Data((0...255).map { UInt8($0) })
            try #expect(echo(bytes, "bytea", on: connection) == bytes)
            try #expect(echo([UInt8]([0, 1, 0xfe]), "bytea", on: connection) == [0, 1, 0xfe])
            try #expect(echo(PostgresJSON(#"{"b": [1, "x"], "a": null}"#), "jsonb", on: connection)?.rawJSON == #"{"a": null, "b": [1, "x"]}"#)
        }
    }

    @Test func stringsStayExactlyAsSent() throws {
        try withConnection { connection, _ in
            let samples = ["", " ", "NULL", "null", "ünïcødé ✓ 日本語 😀", "tab\tnew\nline\rcr", "back\\slash", "quote' \"double\"", "{\"a\",b}", "$1", "E'\\x41'"]
            for sample in samples {
                let row = try connection.query("select \(sample)::text, length(\(sample)::text)").rows[0]
                #expect(try row.decode(0, as: String.self) == sample)
                #expect(try row.decode(1, as: Int.self) == sample.count)
            }
        }
    }

    @Test func injectionAttemptStaysAValue() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table victims (name text)")
            try connection.execute("insert into victims values ('alice')")
            let attack = "x'); drop table victims; --"
            try connection.execute("insert into victims values (\(attack))")
            let names = try connection.query("select name from victims order by name").rows.map { try $0.decode(0, as: String.self) }
            #expect(names == ["alice", attack])
            let matched = try connection.query("select count(*) from victims where name = \("' or '1'='1")")
            #expect(try matched.rows[0].decode(0, as: Int.self) == 0)
        }
    }

    @Test func nullsDecodeAsNilAndNonOptionalDecodeNamesTheColumn() throws {
        try withConnection { connection, _ in
            let none: String? = nil
            let missingInt: Int? = nil
            let row = try connection.query("select \(none)::text as label, \(missingInt)::int8 as amount, 5 as five").rows[0]
            #expect(row.isNull(0))
            #expect(row.isNull(1))
            #expect(!row.isNull(2))
            #expect(try row.decode(0, as: String?.self) == nil)
            #expect(try row.decode("amount", as: Int?.self) == nil)
            #expect(try row.decode("five", as: Int.self) == 5)
            #expect(row["label"] == nil)
            #expect(row["five"] == "5")
            let error = #expect(throws: PostgresError.self) { try row.decode(1, as: Int.self) }
            #expect(error?.kind == .decoding)
            #expect(error?.message.contains("amount") == true)
            #expect(error?.columnName == "amount")
            let unknown = #expect(throws: PostgresError.self) { try row.decode("nope", as: Int.self) }
            #expect(unknown?.message.contains("nope") == true)
        }
    }

    @Test func arraysRoundTripWithAwkwardElements() throws {
        try withConnection { connection, _ in
            let strings = ["plain", "with,comma", "with \"quotes\"", "back\\slash", "NULL", "", "{braces}", "  spaced  ", "ünï 😀", "new\nline"]
            try #expect(echo(strings, "text[]", on: connection) == strings)
            let row = try connection.query("select array_length(\(strings), 1), (\(strings))[5] is null").rows[0]
            #expect(try row.decode(0, as: Int.self) == strings.count)
            #expect(try row.decode(1, as: Bool.self) == false)  // the string "NULL" is not NULL
            try #expect(echo([Int64.min, 0, Int64.max], "int8[]", on: connection) == [Int64.min, 0, Int64.max])
            try #expect(echo([1, 2, 3], "int8[]", on: connection) == [1, 2, 3])
            try #expect(echo([Int32(4)], "int4[]", on: connection) == [4])
            try #expect(echo([1.5, -0.25], "float8[]", on: connection) == [1.5, -0.25])
            try #expect(echo([String](), "text[]", on: connection) == [])
            try #expect(echo([true, false], "bool[]", on: connection) == [true, false])
            let withNulls: [String?] = ["a", nil, "NULL", nil]
            try #expect(echo(withNulls, "text[]", on: connection) == withNulls)
            let uuids = [UUID(), UUID()]
            try #expect(echo(uuids, "uuid[]", on: connection) == uuids)
            let nulls = try connection.query("select (\(withNulls))[2] is null, (\(withNulls))[3] is null").rows[0]
            #expect(try nulls.decode(0, as: Bool.self))
            #expect(try !nulls.decode(1, as: Bool.self))
        }
    }

    @Test func datesRoundTripWithMicroseconds() throws {
        try withConnection { connection, _ in
            let samples = [
                Date(timeIntervalSince1970: 1_795_983_832.123456),
                Date(timeIntervalSince1970: 0),
                Date(timeIntervalSince1970: -86_400.5),
                Date(timeIntervalSince1970: 4_102_444_799.999999),
            ]
            for sample in samples {
                let decoded = try #require(try echo(sample, "timestamptz", on: connection))
                #expect(abs(decoded.timeIntervalSince1970 - sample.timeIntervalSince1970) < 0.000_001)
                #expect(PostgresTimestamp.format(decoded) == PostgresTimestamp.format(sample))
            }
            let row = try connection.query("""
                select '2026-11-29 20:23:52.123456+05:30'::timestamptz,
                       '2026-11-29 20:23:52-03'::timestamptz,
                       extract(epoch from \(samples[0]))::text,
                       now() - \(Date()) < interval '1 hour',
                       array['2026-01-01 00:00:00+00'::timestamptz, null]
                """).rows[0]
            #expect(try row.decode(0, as: Date.self) == PostgresTimestamp.parse("2026-11-29 14:53:52.123456+00"))
            #expect(try row.decode(1, as: Date.self) == PostgresTimestamp.parse("2026-11-29 23:23:52+00"))
            #expect(try row.decode(2, as: String.self) == "1795983832.123456")
            #expect(try row.decode(3, as: Bool.self))
            #expect(try row.decode(4, as: [Date?].self) == [PostgresTimestamp.parse("2026-01-01 00:00:00+00"), nil])
        }
    }

    @Test func sessionUsesUTCAndUTF8() throws {
        try withConnection { connection, _ in
            let row = try connection.query("select current_setting('TimeZone'), current_setting('client_encoding'), now()::text").rows[0]
            #expect(try row.decode(0, as: String.self) == "UTC")
            #expect(try row.decode(1, as: String.self) == "UTF8")
            #expect(try row.decode(2, as: String.self).hasSuffix("+00"))
        }
    }

    @Test func jsonCodableHelpers() throws {
        struct Payload: Codable, Equatable { var name: String; var tags: [String] }
        try withConnection { connection, _ in
            let payload = Payload(name: "ü \"x\"", tags: ["a", "b"])
            let row = try connection.query("select \(try PostgresJSON(encoding: payload))::jsonb -> 'tags' ->> 1, \(try PostgresJSON(encoding: payload))::jsonb").rows[0]
            #expect(try row.decode(0, as: String.self) == "b")
            #expect(try row.decode(1, as: PostgresJSON.self).decode(Payload.self) == payload)
        }
    }

    @Test func affectedRowsAndColumns() throws {
        try withConnection { connection, _ in
            try connection.simpleQuery("create table t (id int8 primary key, note text); create index on t (note)")
            #expect(try connection.execute("insert into t select g, 'n' || g from generate_series(1, 5) g") == 5)
            #expect(try connection.execute("update t set note = \("x") where id > \(3)") == 2)
            let result = try connection.query("select id, note from t order by id")
            #expect(result.columns == ["id", "note"])
            #expect(result.affectedRows == 5)
            #expect(try result.rows.map { try $0.decode("id", as: Int64.self) } == [1, 2, 3, 4, 5])
            #expect(try connection.execute("delete from t") == 5)
        }
    }
}
