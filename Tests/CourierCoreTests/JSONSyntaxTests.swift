import CourierCore
import Foundation
import Testing

/// `JSONSyntax` decides whether a request body is sent as JSON and whether a response
/// expected to be JSON is. Its answers are checked against RFC 8259 cases written out here,
/// and against Foundation's parser on generated near-JSON text.
struct JSONSyntaxTests {
    static let valid = [
        "{}", "[]", " { } ", "\t[\n]\r\n", "0", "-0", "12", "-3.25", "1e5", "1E-5", "2.5e+10", "true", "false", "null",
        #""""#, #""a\"b\\c\/d\b\f\n\r\t""#, #""\u00e9\uD83D\uDE00""#, "\"é 😀\"",
        #"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#, #"[[[]],[{}],{"":[]}]"#, "\u{FEFF}{\"bom\":1}",
        #"{"n": -1.5e-3 , "s" : "x" }"#,
    ]
    static let invalid = [
        "", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]",
        "01", "-", "+1", ".5", "1.", "1e", "1e+", "0x10", "NaN", "Infinity", "tru", "nul", "truex", "[true false]",
        "\"abc", "\"a\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"tab\there\"", "\"line\nbreak\"", "{} {}", "[] x", "1 2",
        "{\"a\":1}}", "[[]", "\u{0}",
    ]

    @Test(arguments: valid) func acceptsJSON(_ text: String) {
        #expect(JSONSyntax.isValid(text), "\(text.debugDescription) is JSON")
        #expect(JSONSyntax.isValid(Array(text.utf8)))
    }

    @Test(arguments: invalid) func refusesWhatIsNotJSON(_ text: String) {
        #expect(!JSONSyntax.isValid(text), "\(text.debugDescription) is not JSON")
    }

    @Test func refusesMalformedUTF8InStrings() {
        let quote = UInt8(ascii: "\"")
        for bad: [UInt8] in [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xFF], [0x80]] {
            #expect(!JSONSyntax.isValid([quote] + bad + [quote]), "\(bad) is not UTF-8")
        }
        #expect(JSONSyntax.isValid([quote, 0xE2, 0x82, 0xAC, quote]), "the euro sign is")
    }

    @Test func nestingIsBoundedWithoutRecursion() {
        let deep = String(repeating: "[", count: JSONSyntax.maximumDepth) + String(repeating: "]", count: JSONSyntax.maximumDepth)
        #expect(JSONSyntax.isValid(deep))
        let deeper = "[" + deep + "]"
        #expect(!JSONSyntax.isValid(deeper))
        // Far past the bound: refused, and no stack is used up on the way.
        #expect(!JSONSyntax.isValid(String(repeating: "[", count: 1_000_000)))
    }

    /// Where Foundation's parser (the worker's check before) and the RFC part ways, the RFC wins.
    @Test func followsTheRFCWhereFoundationDoesNot() {
        // Foundation on Linux accepts a trailing comma in an object; RFC 8259 does not.
        #expect(!JSONSyntax.isValid(#"{"a":1,}"#))
        // Foundation refuses numbers beyond a Double; the grammar has no range.
        #expect(JSONSyntax.isValid("1e400"))
        // Lone surrogates: refused by both (I-JSON), a pair is fine.
        #expect(!JSONSyntax.isValid(#""\uD83D""#) && !JSONSyntax.isValid(#""\uDE00x""#) && !JSONSyntax.isValid(#""\uD83D\u0041""#))
        #expect(JSONSyntax.isValid(#""\uD83D\uDE00""#))
    }

    /// Random near-JSON: mutations of valid documents (bytes dropped, repeated, swapped for
    /// JSON's punctuation). Foundation's parser must agree on every one but the two kinds
    /// above (seeded, so a failure repeats).
    @Test func agreesWithFoundationOnGeneratedText() {
        var random = SplitMix64(seed: 0x5EED)
        let alphabet = Array(#"{}[],:"\ -+.eE0123456789tfnulrasx"#.utf8)
        var checked = 0
        for base in Self.valid where !base.hasPrefix("\u{FEFF}") {
            for _ in 0..<400 {
                var bytes = Array(base.utf8)
                for _ in 0..<(1 + Int(random.next() % 3)) {
                    let at = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
                    switch random.next() % 3 {
                    case 0: if !bytes.isEmpty { bytes.remove(at: at) }
                    case 1: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                    default: if !bytes.isEmpty { bytes[at] = alphabet[Int(random.next() % UInt64(alphabet.count))] }
                    }
                }
                let text = String(decoding: bytes, as: UTF8.self)
                let foundation = (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
                let mine = JSONSyntax.isValid(bytes)
                if foundation, !mine, Self.hasTrailingCommaInObject(text) { continue }
                if mine, !foundation, Self.hasExponentBeyondADouble(text) { continue }
                #expect(mine == foundation, "\(text.debugDescription)")
                checked += 1
            }
        }
        #expect(checked > 5_000)
    }

    static func hasTrailingCommaInObject(_ text: String) -> Bool {
        text.replacingOccurrences(of: " ", with: "").contains(",}")
    }

    static func hasExponentBeyondADouble(_ text: String) -> Bool {
        let lowered = Array(text.lowercased().utf8)
        guard let e = lowered.firstIndex(of: UInt8(ascii: "e")) else { return false }
        let digits = lowered[(e + 1)...].drop { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") }
            .prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return digits.count >= 3
    }
}
