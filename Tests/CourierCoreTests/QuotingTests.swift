import CourierCore
import Testing

@Suite struct QuotingTests {
    @Test func escapesControlAndNonASCII() {
        #expect(Quoting.escape("a\"b\\c\n\r\t") == "a\\\"b\\\\c\\n\\r\\t")
        #expect(Quoting.escape(bytes: [0x00, 0x41, 0xFF]) == "\\x00A\\xFF")
        #expect(Quoting.escape("é") == "\\xC3\\xA9")
    }

    @Test func cutsAtTheLimit() {
        #expect(Quoting.escape("abcdef", limit: 3) == "abc…")
        #expect(Quoting.escape("abc", limit: 3) == "abc")
        #expect(Quoting.quote("x y") == "\"x y\"")
    }
}
