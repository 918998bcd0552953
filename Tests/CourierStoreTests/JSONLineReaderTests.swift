@testable import CourierStore
import CourierCore
import Foundation
import Testing

/// The NDJSON reader must accept exactly the JSON Foundation accepts (for one object
/// per line) and decode strings the same way: these tests compare the two.
@Suite struct JSONLineReaderTests {
    /// Lines both readers must agree on: valid ones decode to the same strings and
    /// numbers; invalid ones are refused by both.
    static let corpus: [String] = [
        #"{}"#, #"{ }"#, #"  {"a":1}  "#, "{\"a\":1}\r", "\t{\"a\" :\n 1}",
        #"{"a":"plain","b":"esc \" \\ \/ \b \f \n \r \t","c":"\u00e9\u20ac\ud83d\ude00"}"#,
        #"{"a":"ünïcödé 😀 raw"}"#,
        #"{"a":[],"b":{},"c":[1,[2,[3,{"d":null}]]],"e":{"f":{"g":[true,false,null]}}}"#,
        #"{"n":0,"m":-0,"o":12.5e-3,"p":1E+2,"q":-7,"r":123456789012}"#,
        // invalid
        #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":+1}"#, #"{"a":1e}"#, #"{"a":-}"#,
        #"{"a":"unterminated}"#, #"{"a":"bad \x escape"}"#, #"{"a":"\u12"}"#, #"{"a":"\ud83d"}"#, #"{"a":"\ude00"}"#,
        "{\"a\":\"raw\ttab\"}", "{\"a\":\"raw\nnewline\"}",
        #"{,"a":1}"#, #"{"a" 1}"#, #"{a:1}"#, #"{'a':1}"#, #"{"a":1}}"#, #"{"a":1} x"#,
        #"{"a":tru}"#, #"{"a":nul}"#, #"{"a":True}"#, #"{"a":NaN}"#, #"{"a":Infinity}"#, #"{"a":[1 2]}"#,
        #"{"a":{"b"}}"#, "", " ", #"{"#, #"{"a":"#,
    ]

    @Test(arguments: corpus)
    func agreesWithFoundation(line: String) {
        let foundation = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        let ours: [String: JSONLineReader.Value]?
        let texts: [String: String]
        (ours, texts) = Array(line.utf8).withUnsafeBufferPointer { bytes in
            var reader = JSONLineReader(bytes)
            guard let members = (try? reader.readObjectMembers()) ?? nil else { return (nil, [:]) }
            var texts: [String: String] = [:]
            for (key, value) in members {
                switch value {
                case .string(let text): texts[key] = text
                case .number(let range), .object(let range), .array(let range): texts[key] = reader.text(range)
                case .bool, .null: break
                }
            }
            return (Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) }), texts)
        }
        #expect((foundation == nil) == (ours == nil), "accepted by \(foundation == nil ? "us only" : "Foundation only")")
        guard let foundation, let ours else { return }
        #expect(Set(foundation.keys) == Set(ours.keys))
        for (key, value) in ours {
            switch value {
            case .string(let text):
                #expect(foundation[key] as? String == text, "\(key)")
            case .number:
                #expect(texts[key].flatMap(Double.init) == (foundation[key] as? NSNumber)?.doubleValue, "\(key)")
            case .object, .array:
                #expect(texts[key] != nil, "\(key): raw text is valid UTF-8")
            case .bool(let flag):
                #expect((foundation[key] as? Bool) == flag, "\(key)")
            case .null:
                #expect(foundation[key] is NSNull, "\(key)")
            }
        }
    }

    /// Foundation on Linux accepts trailing commas; RFC 8259 does not, and neither do we,
    /// so a line that another JSON tool would refuse is not enqueued.
    @Test(arguments: [#"{"a":1,}"#, #"{"a":[1,]}"#, #"{"a":{"b":1,}}"#])
    func trailingCommasAreRefused(line: String) {
        #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "Foundation is lenient here")
        let refused = Array(line.utf8).withUnsafeBufferPointer { bytes in
            var reader = JSONLineReader(bytes)
            return (try? reader.readObjectMembers()) == nil
        }
        #expect(refused)
    }

    @Test func errorsSayWhereAndWhat() {
        let error = #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: #"{"url":"https://e.com",}"#) }
        #expect(error?.field == "line")
        #expect(error?.message == "is not valid JSON (at column 24: expected a member name in double quotes)")
    }

    @Test func aKeyGivenTwiceIsRefusedByName() {
        let error = #expect(throws: ValidationError.self) {
            try EnqueueRequest(jsonLine: #"{"url":"https://e.com","queue":"a","queue":"b"}"#)
        }
        #expect(error?.field == "queue")
        #expect(error?.message == "is given twice")
    }

    @Test func invalidUTF8IsRefusedInStringsAndInRawBodies() {
        var line = Array(#"{"url":"https://e.com","body":"x"}"#.utf8)
        line[line.count - 3] = 0xFF
        let inString = #expect(throws: ValidationError.self) {
            try line.withUnsafeBufferPointer { try EnqueueRequest(jsonLineBytes: $0) }
        }
        #expect(inString?.field == "line")
        var raw = Array(#"{"url":"https://e.com","body":{"a":"x"}}"#.utf8)
        raw[raw.count - 4] = 0xC3   // a lead byte with no continuation
        let inBody = #expect(throws: ValidationError.self) {
            try raw.withUnsafeBufferPointer { try EnqueueRequest(jsonLineBytes: $0) }
        }
        #expect(inBody?.field == "body")
    }

    @Test func deepNestingIsRefusedNotRecursedInto() throws {
        let depth = JSONSyntax.maximumDepth + 10
        let line = #"{"url":"https://e.com","body":"# + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}"
        let error = #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: line) }
        #expect(error?.field == "line")
        #expect(error?.message.contains("levels of nesting") == true)
        let fine = #"{"url":"https://e.com","body":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(try EnqueueRequest(jsonLine: fine).body?.utf8.count == 200)
    }

    /// The worker's body check (`JSONSyntax.isValid`) and the NDJSON reader refuse the same
    /// depth: one bound, counted from the line's own object as level 1.
    @Test func bothJSONPathsRefuseTheSameDepth() throws {
        func line(levels: Int) -> String {
            let inner = levels - 1   // the line's object is the first level
            return #"{"url":"https://e.com","body":"# + String(repeating: "[", count: inner) + String(repeating: "]", count: inner) + "}"
        }
        let deepest = line(levels: JSONSyntax.maximumDepth), tooDeep = line(levels: JSONSyntax.maximumDepth + 1)
        #expect(JSONSyntax.isValid(deepest))
        #expect(try EnqueueRequest(jsonLine: deepest).body?.utf8.count == 2 * (JSONSyntax.maximumDepth - 1))
        #expect(!JSONSyntax.isValid(tooDeep))
        let error = #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: tooDeep) }
        #expect(error?.message.contains("at most \(JSONSyntax.maximumDepth) levels of nesting") == true)
    }

    @Test func wholeNumbersInAnyJSONSpellingAreIntegers() throws {
        #expect(try EnqueueRequest(jsonLine: #"{"url":"https://e.com","priority":5.0}"#).priority == 5)
        #expect(try EnqueueRequest(jsonLine: #"{"url":"https://e.com","priority":-1e2}"#).priority == -100)
        #expect(try EnqueueRequest(jsonLine: #"{"url":"https://e.com","max_attempts":7}"#).maxAttempts == 7)
        for bad in [#""5""#, "5.5", "1e300", "true", "null", "[5]"] {
            let error = #expect(throws: ValidationError.self) { try EnqueueRequest(jsonLine: #"{"url":"https://e.com","priority":"# + bad + "}") }
            #expect(error?.field == "priority", "\(bad)")
        }
    }

    @Test func headersKeepSecretsAndSortByName() throws {
        let request = try EnqueueRequest(jsonLine: #"{"url":"https://e.com","headers":{"X-B":"2","Authorization":{"secret":"T"},"X-A":"a\"b"}}"#)
        #expect(request.headers.map(\.name) == ["Authorization", "X-A", "X-B"])
        #expect(request.headers[1].value == .literal(#"a"b"#))
        let stored = try JSONSerialization.jsonObject(with: Data(request.headersJSON.utf8)) as? [String: Any]
        #expect(stored?["X-A"] as? String == #"a"b"#)
        #expect((stored?["Authorization"] as? [String: String]) == ["secret": "T"])
        for bad in [#"{"secret":"T","x":1}"#, #"{"secrets":"T"}"#, #"{"secret":1}"#, "[]", "null"] {
            let error = #expect(throws: ValidationError.self) {
                try EnqueueRequest(jsonLine: #"{"url":"https://e.com","headers":{"A":"# + bad + "}}")
            }
            #expect(error?.field == "headers", "\(bad)")
        }
    }

    @Test func headersJSONEscapesControlCharacters() throws {
        var request = EnqueueRequest(url: "https://e.com")
        request.headers = [("X", .literal("tab\there \u{1} \\ \"q\""))]
        let parsed = try JSONSerialization.jsonObject(with: Data(request.headersJSON.utf8)) as? [String: String]
        #expect(parsed == ["X": "tab\there \u{1} \\ \"q\""])
        #expect(EnqueueRequest(url: "https://e.com").headersJSON == "{}")
    }
}
