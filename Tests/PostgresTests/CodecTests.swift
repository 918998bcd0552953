import Foundation
@testable import Postgres
import Testing

@Suite struct QueryBuildingTests {
    @Test func interpolationsBecomeNumberedBinds() {
        let id = 42
        let name: String? = "x'; drop table jobs; --"
        let query: PostgresQuery = "select * from t where id = \(id) and name = \(name) and flag = \(true)"
        #expect(query.sql == "select * from t where id = $1 and name = $2 and flag = $3")
        #expect(query.binds.map(\.postgresText) == ["42", "x'; drop table jobs; --", "true"])
        #expect(query.binds.map { type(of: $0).postgresTypeOID } == [20, 0, 16])
    }

    @Test func plainLiteralHasNoBinds() {
        let query: PostgresQuery = "select 1"
        #expect(query.sql == "select 1")
        #expect(query.binds.isEmpty)
    }

    @Test func nilOptionalBindsNull() {
        let missing: Int? = nil
        let query: PostgresQuery = "select \(missing)"
        #expect(query.binds.count == 1)
        #expect(query.binds[0].postgresText == nil)
        #expect(type(of: query.binds[0]).postgresTypeOID == PostgresTypeOID.int8)
    }

    @Test func appendRenumbersParameters() {
        var query: PostgresQuery = "select id from t where a = \(1)"
        query.append(" and b = \("two") and c = \(Int32(3))")
        #expect(query.sql == "select id from t where a = $1 and b = $2 and c = $3")
        #expect(query.binds.map(\.postgresText) == ["1", "two", "3"])
        var raw = PostgresQuery(unsafeSQL: "select $1::int + $2::int", binds: [1, 2])
        raw.append(" + \(3)")
        #expect(raw.sql == "select $1::int + $2::int + $3")
        #expect(raw.binds.count == 3)
    }

    @Test func descriptionShowsSQLButNotValues() {
        let secret = "hunter2-secret"
        let query: PostgresQuery = "select \(secret)"
        #expect(!query.description.contains(secret))
        #expect(query.description.contains("select $1"))
    }
}

@Suite struct ValueTextTests {
    @Test func scalarsEncode() {
        #expect(Int64.max.postgresText == "9223372036854775807")
        #expect(Int32.min.postgresText == "-2147483648")
        #expect(false.postgresText == "false")
        #expect(0.1.postgresText == "0.1")
        #expect(Double.infinity.postgresText == "Infinity")
        #expect((-Double.infinity).postgresText == "-Infinity")
        #expect(Double.nan.postgresText == "NaN")
        #expect(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!.postgresText == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        // The byte-wise form agrees with Foundation's, extremes and random ids alike.
        let ids = [UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!]
            + (0..<200).map { _ in UUID() }
        for id in ids { #expect(id.postgresText == id.uuidString.lowercased()) }
        #expect(Data([0x00, 0xab, 0xff]).postgresText == "\\x00abff")
        #expect(([0x0a, 0x0b] as [UInt8]).postgresText == "\\x0a0b")
        #expect(type(of: ([1] as [UInt8]) as any PostgresEncodable).postgresTypeOID == PostgresTypeOID.bytea)
    }

    @Test func scalarsDecode() throws {
        #expect(try Int(postgresText: "-12") == -12)
        #expect(try Bool(postgresText: "t"))
        #expect(try !Bool(postgresText: "f"))
        #expect(try Double(postgresText: "Infinity") == .infinity)
        #expect(try Double(postgresText: "NaN").isNaN)
        #expect(try Data(postgresText: "\\x00ABff") == Data([0, 0xab, 0xff]))
        #expect(throws: PostgresError.self) { try Int(postgresText: "12.5") }
        #expect(throws: PostgresError.self) { try Bool(postgresText: "yes") }
        #expect(throws: PostgresError.self) { try Data(postgresText: "\\x0") }
        #expect(throws: PostgresError.self) { try UUID(postgresText: "nope") }
    }

    @Test func decodingErrorsDoNotRepeatTheValue() {
        let error = #expect(throws: PostgresError.self) { try Int(postgresText: "secret-token-123") }
        #expect(error?.kind == .decoding)
        #expect(error.map { !$0.description.contains("secret-token-123") } == true)
    }
}

@Suite struct ArrayLiteralTests {
    @Test func formatQuotesEveryElement() {
        let text = PostgresArrayLiteral.format(["a", "b,c", "say \"hi\"", "back\\slash", "NULL", "", nil, "{}", " sp "])
        #expect(text == #"{"a","b,c","say \"hi\"","back\\slash","NULL","",NULL,"{}"," sp "}"#)
        #expect(PostgresArrayLiteral.format([]) == "{}")
    }

    @Test func parseHandlesQuotingAndNulls() throws {
        #expect(try PostgresArrayLiteral.parse("{}") == [])
        #expect(try PostgresArrayLiteral.parse("{1,2,3}") == ["1", "2", "3"])
        #expect(try PostgresArrayLiteral.parse(#"{a,"b c",NULL,"NULL",null,"",  x  ,"q\"uo\\te"}"#)
            == ["a", "b c", nil, "NULL", nil, "", "x", "q\"uo\\te"])
        #expect(try PostgresArrayLiteral.parse("[0:1]={7,8}") == ["7", "8"])
        #expect(try PostgresArrayLiteral.parse(#"{"ünï,cødé ✓"}"#) == ["ünï,cødé ✓"])
    }

    @Test func parseRejectsMalformedAndNested() {
        for bad in ["", "1,2", "{1,2", #"{"a}"#, "{{1,2},{3,4}}", "{1}x"] {
            #expect(throws: PostgresError.self, "\(bad)") { try PostgresArrayLiteral.parse(bad) }
        }
    }

    @Test func roundTripsThroughFormat() throws {
        let values: [String?] = ["", "NULL", "a\"b", "c\\d", "e,f", "{g}", "tab\there", "new\nline", nil, "😀"]
        #expect(try PostgresArrayLiteral.parse(PostgresArrayLiteral.format(values)) == values)
    }

    @Test func typedArrays() throws {
        #expect([1, 2].postgresText == #"{"1","2"}"#)
        #expect(type(of: [Int64(1)] as any PostgresEncodable).postgresTypeOID == PostgresTypeOID.int8Array)
        #expect(type(of: ["a"] as any PostgresEncodable).postgresTypeOID == PostgresTypeOID.textArray)
        #expect(([1, nil] as [Int?]).postgresText == #"{"1",NULL}"#)
        #expect(try [Int64](postgresText: "{1,-2}") == [1, -2])
        #expect(try [Int?](postgresText: "{1,NULL}") == [1, nil])
        #expect(throws: PostgresError.self) { try [Int](postgresText: "{1,NULL}") }
    }
}

@Suite struct TimestampTextTests {
    private func date(_ seconds: Int64, micros: Int64 = 0) -> Date {
        Date(timeIntervalSince1970: Double(seconds * 1_000_000 + micros) / 1_000_000)
    }

    @Test func formatsUTCWithMicroseconds() {
        #expect(PostgresTimestamp.format(date(0)) == "1970-01-01 00:00:00.000000+00")
        #expect(PostgresTimestamp.format(date(1_795_983_832, micros: 123_456)) == "2026-11-29 20:23:52.123456+00")
        #expect(PostgresTimestamp.format(date(-1, micros: 500_000)) == "1969-12-31 23:59:59.500000+00")
        #expect(PostgresTimestamp.format(date(951_782_400)) == "2000-02-29 00:00:00.000000+00")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 0.0000004)) == "1970-01-01 00:00:00.000000+00")
    }

    @Test func parsesServerOutput() throws {
        #expect(try PostgresTimestamp.parse("2026-11-29 20:23:52.123456+00") == date(1_795_983_832, micros: 123_456))
        #expect(try PostgresTimestamp.parse("2026-11-29 20:23:52+00") == date(1_795_983_832))
        #expect(try PostgresTimestamp.parse("2026-11-29 20:23:52.5+00") == date(1_795_983_832, micros: 500_000))
        #expect(try PostgresTimestamp.parse("2026-11-30 01:53:52+05:30") == date(1_795_983_832))
        #expect(try PostgresTimestamp.parse("2026-11-29 17:23:52-03") == date(1_795_983_832))
        #expect(try PostgresTimestamp.parse("2026-11-29T20:23:52Z") == date(1_795_983_832))
        #expect(try PostgresTimestamp.parse("2026-11-29 20:23:52") == date(1_795_983_832))
        #expect(try PostgresTimestamp.parse("2026-11-29") == date(1_795_910_400))
        #expect(try PostgresTimestamp.parse("1900-01-01 00:00:00-00:01:15") == date(-2_208_988_800 + 75))
        #expect(try PostgresTimestamp.parse("infinity") == .distantFuture)
        #expect(try PostgresTimestamp.parse("-infinity") == .distantPast)
    }

    @Test func bcYearsRoundTrip() throws {
        let text = "0044-03-15 12:00:00.000000+00 BC"
        let parsed = try PostgresTimestamp.parse(text)
        #expect(PostgresTimestamp.format(parsed) == text)
    }

    @Test func rejectsGarbage() {
        for bad in ["", "2026", "2026-13-01", "2026-11-29 25:00", "2026-11-29 20:23:52.", "2026-11-29 20:23:52+", "2026-11-29 20:23:52+00 junk"] {
            #expect(throws: PostgresError.self, "\(bad)") { try PostgresTimestamp.parse(bad) }
        }
    }

    @Test func calendarArithmeticIsInverse() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            let (y, m, d) = PostgresTimestamp.civil(fromDays: days)
            #expect(PostgresTimestamp.days(fromCivil: y, m, d) == days)
        }
    }
}

@Suite struct StatementCacheTests {
    @Test func evictsLeastRecentlyUsed() {
        var cache = PostgresStatementCache(capacity: 2)
        let a = cache.nextName(), b = cache.nextName(), c = cache.nextName()
        #expect(Set([a, b, c]).count == 3)
        #expect(cache.insert("A", name: a) == nil)
        #expect(cache.insert("B", name: b) == nil)
        #expect(cache.lookup("A") == a)  // B is now least recently used
        #expect(cache.insert("C", name: c) == b)
        #expect(cache.lookup("B") == nil)
        #expect(cache.lookup("A") == a)
        #expect(cache.count == 2)
    }

    @Test func keyIncludesParameterTypes() {
        #expect(PostgresStatementCache.key(sql: "select $1", types: [20]) != PostgresStatementCache.key(sql: "select $1", types: [23]))
        // Types are separated, so [1, 23] and [12, 3] are different statements.
        #expect(PostgresStatementCache.key(sql: "select $1, $2", types: [1, 23]) != PostgresStatementCache.key(sql: "select $1, $2", types: [12, 3]))
    }
}

@Suite struct ConfigurationTests {
    @Test func resolvePrefersFlagThenEnvironmentThenPGVariables() {
        let environment = ["DATABASE_URL": "postgresql://env/db", "PGHOST": "ignored"]
        #expect(PostgresConfiguration.resolve(flag: "host=flag", environment: environment).connectionString == "host=flag")
        #expect(PostgresConfiguration.resolve(flag: nil, environment: environment).connectionString == "postgresql://env/db")
        #expect(PostgresConfiguration.resolve(flag: "", environment: environment).connectionString == "postgresql://env/db")
        #expect(PostgresConfiguration.resolve(flag: nil, environment: ["DATABASE_URL": ""]).connectionString == "")
        #expect(PostgresConfiguration.resolve(flag: nil, environment: [:]).connectionString == "")
    }

    @Test func connectParametersLeaveOptionsToTheUser() throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://u@h:5/db?options=-c%20search_path%3Dx", applicationName: "courier-test")
        let parameters = Dictionary(try configuration.connectParameters().map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        #expect(parameters["dbname"] == "db")
        #expect(parameters["port"] == "5")
        #expect(parameters["application_name"] == "courier-test")
        #expect(parameters["client_encoding"] == "UTF8")
        // The user's own options pass unchanged; Courier adds none (PgBouncer refuses the parameter).
        #expect(parameters["options"] == "-c search_path=x")
        let bare = Dictionary(try PostgresConfiguration(connectionString: "").connectParameters().map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        #expect(bare["dbname"] == nil)
        #expect(bare["options"] == nil)
        #expect(bare["fallback_application_name"] == "courier")
        #expect(try PostgresConnectionString.parse("jobsdb").map(\.value) == ["jobsdb"])
    }

    @Test func malformedConnectionStringIsAConnectionError() {
        let error = #expect(throws: PostgresError.self) { try PostgresConnectionString.parse("host=x port") }
        #expect(error?.kind == .connection)
    }

    @Test func descriptionMasksPassword() throws {
        let configuration = PostgresConfiguration(connectionString: "postgresql://user:s3cr3t-pw@host/db")
        #expect(!configuration.description.contains("s3cr3t-pw"))
        #expect(!"\(configuration)".contains("s3cr3t-pw"))
        #expect(configuration.description.contains("password=***"))
    }

    @Test func renderQuotesValues() throws {
        let rendered = PostgresConnectionString.render([("host", "/tmp/a b"), ("password", "it's\\x"), ("dbname", "plain")])
        #expect(rendered == #"host='/tmp/a b' password='it\'s\\x' dbname=plain"#)
        let parsed = try PostgresConnectionString.parse(rendered)
        #expect(parsed.map(\.value).sorted() == ["/tmp/a b", "it's\\x", "plain"].sorted())
    }
}

@Suite struct ErrorValueTests {
    @Test func descriptionFormat() {
        let error = PostgresError(kind: .query, sqlState: "22023", message: "bad value", detail: "more", hint: "try this", transactionStep: .commit)
        #expect(error.description == "COMMIT failed: SQLSTATE 22023: bad value (detail: more) (hint: try this)")
        #expect(!error.isConnectionLoss)
    }

    @Test func connectionLossStates() {
        for state in ["08006", "08003", "57P01", "57P02", "57P03"] {
            #expect(PostgresError(kind: .query, sqlState: state, message: "x").isConnectionLoss, "\(state)")
        }
        #expect(!PostgresError(kind: .query, sqlState: "57014", message: "x").isConnectionLoss)
    }

    @Test func redactionReplacesLongValuesOnly() {
        #expect(PostgresError.redact("value \"abc\" and \"secret-1\"", secrets: ["abc", "secret-1"]) == "value \"abc\" and \"<redacted>\"")
    }
}
