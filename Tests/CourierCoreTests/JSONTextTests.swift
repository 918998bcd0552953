import CourierCore
import Foundation
import Testing

@Suite struct JSONTextTests {
    @Test(arguments: ["", "plain", "quote \" backslash \\ slash /", "tab\there\nnew\rcr", "\u{0}\u{1}\u{1F}\u{7F}", "ünï 😀"])
    func quotedTextReadsBackAsTheSameString(_ text: String) throws {
        let literal = JSONText.quoted(text)
        #expect(literal.hasPrefix("\"") && literal.hasSuffix("\""))
        #expect(!literal.unicodeScalars.contains { $0.value < 0x20 }, "no raw control characters: \(literal.debugDescription)")
        let decoded = try JSONSerialization.jsonObject(with: Data(literal.utf8), options: [.fragmentsAllowed]) as? String
        #expect(decoded == text)
    }

    @Test func controlCharactersUseFourHexDigits() {
        #expect(JSONText.quoted("\u{1}") == #""\u0001""#)
        #expect(JSONText.quoted("\u{1F}") == #""\u001f""#)
        var json = "["
        JSONText.appendQuoted("a", to: &json)
        #expect(json == #"["a""#)
    }
}
