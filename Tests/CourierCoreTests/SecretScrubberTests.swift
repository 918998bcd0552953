import CourierCore
import Foundation
import Testing

/// Issue 43 item 12: echoes a receiver transformed (case, JSON, HTML and percent escapes,
/// Latin-1 re-encoding) used to survive the scrub, which matched exact bytes. Each
/// transformation here is written by the test itself, independently of the scrubber.
@Suite struct SecretScrubberTests {
    /// 60 bytes: ASCII, with non-ASCII letters, JSON and HTML specials and a `/` in it.
    static let secret = "sk_live_Üb3r-\"q\"/<&>'-9f8e7d6c5b4a3928-ñandú-Z0Y9X8W7V6U5"

    /// `echo` inside other text, scrubbed, must be that text with one placeholder for the echo.
    func expectScrubbed(_ echo: String, _ what: String, secret: String = Self.secret, sourceLocation: SourceLocation = #_sourceLocation) {
        let body = "<p>you sent: " + echo + " (end)</p>"
        let scrubbed = Redaction.scrub(body, secrets: [secret])
        #expect(scrubbed == "<p>you sent: [REDACTED] (end)</p>", "\(what): \(scrubbed)", sourceLocation: sourceLocation)
    }

    @Test func theSecretIsSixtyBytes() {
        #expect(Self.secret.utf8.count == 60)
    }

    @Test func anExactEchoIsRemoved() {
        expectScrubbed(Self.secret, "as sent")
    }

    /// `BEARER SK…`: a receiver that upper-cases what it echoes.
    @Test func anUpperOrLowerCasedEchoIsRemoved() {
        expectScrubbed(Self.secret.uppercased(), "upper case, non-ASCII letters too")
        expectScrubbed(Self.secret.lowercased(), "lower case")
        let bearer = "Bearer sk_live_0123456789abcdefghij"
        #expect(Redaction.scrub("401: BEARER SK_LIVE_0123456789ABCDEFGHIJ is not valid", secrets: [bearer]) == "401: [REDACTED] is not valid")
    }

    /// Every character as `\uXXXX` (surrogate pairs beyond the BMP), and the usual short escapes.
    @Test func aJSONEscapedEchoIsRemoved() {
        func allEscaped(_ text: String) -> String {
            text.utf16.map { String(format: "\\u%04x", UInt32($0)) }.joined()
        }
        expectScrubbed(allEscaped(Self.secret), "every character \\u-escaped")
        let usual = Self.secret.replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "/", with: "\\/")
            .replacingOccurrences(of: "Ü", with: "\\u00DC").replacingOccurrences(of: "ñ", with: "\\u00f1")
        expectScrubbed(usual, "quotes, slash and non-ASCII escaped")
        let emoji = "key-🔑-0123456789abcdef"
        expectScrubbed(allEscaped(emoji), "a surrogate pair", secret: emoji)
        let newline = "line-one\nline-two-0123"
        expectScrubbed(newline.replacingOccurrences(of: "\n", with: "\\n"), "\\n", secret: newline)
    }

    @Test func anHTMLEscapedEchoIsRemoved() {
        let named = Self.secret.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
        expectScrubbed(named, "named and decimal entities")
        let numeric = Self.secret.unicodeScalars.map { $0.isASCII && $0.properties.isAlphabetic ? String($0) : "&#x\(String($0.value, radix: 16));" }.joined()
        expectScrubbed(numeric, "hexadecimal entities")
        let decimal = Self.secret.unicodeScalars.map { "&#\($0.value);" }.joined()
        expectScrubbed(decimal, "every character a decimal entity")
    }

    @Test func aPercentEncodedEchoIsRemoved() {
        let all = Self.secret.utf8.map { String(format: "%%%02X", $0) }.joined()
        expectScrubbed(all, "every byte percent-encoded")
        let query = Self.secret.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&/'")))!
        expectScrubbed(query, "as a query value")
        expectScrubbed(all.lowercased(), "lower-case hex digits")
    }

    /// UTF-8 read as Latin-1 (or Windows-1252) and encoded again in UTF-8: the measured
    /// leak was 45 of the 60 bytes.
    @Test func aLatin1ReencodedEchoIsRemoved() throws {
        let latin1 = try #require(String(data: Data(Self.secret.utf8), encoding: .isoLatin1))
        #expect(latin1 != Self.secret && latin1.utf8.count > 60)
        expectScrubbed(latin1, "Latin-1")
        let twice = try #require(String(data: Data(latin1.utf8), encoding: .isoLatin1))
        expectScrubbed(twice, "Latin-1 twice")
        expectScrubbed(latin1.uppercased(), "Latin-1, upper-cased")
        // Windows-1252 gives 0x80...0x9F other characters: € is E2 82 AC, shown as "â‚¬".
        let euro = "price-€-0123456789-token"
        expectScrubbed("price-\u{E2}\u{201A}\u{AC}-0123456789-token", "Windows-1252", secret: euro)
        // Re-encoded and then JSON-escaped, as a JSON API of such a receiver sends it.
        let escaped = latin1.unicodeScalars.map { $0.isASCII ? String($0) : String(format: "\\u%04x", $0.value) }.joined()
        expectScrubbed(escaped, "Latin-1, then \\u-escaped")
    }

    /// A long run of the secret's bytes goes, wherever it is cut; a run shorter than the
    /// window, on its own, stays (the documented limit).
    @Test func aPartialEchoOfTwelveBytesOrMoreIsRemoved() {
        let bytes = Array(Self.secret.utf8)
        for (start, length) in [(0, 12), (20, 25), (47, 13), (13, 30)] {
            let run = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
            let scrubbed = Redaction.scrub("[" + run.uppercased() + "]", secrets: [Self.secret])
            #expect(scrubbed == "[[REDACTED]]", "\(length) bytes from \(start): \(scrubbed)")
        }
        let short = "[" + String(decoding: bytes[24..<35], as: UTF8.self) + "]"
        #expect(Redaction.scrub(short, secrets: [Self.secret]) == short, "11 bytes alone are below the window")
        // A receiver that changes one character inside the secret: both sides of it go.
        var changed = Self.secret
        changed.replace("9f8e", with: "9F8E")
        changed.replace("-ñandú-", with: "-NANDU-")
        // The dashes beside the change are the secret's too, so they go with their windows.
        #expect(Redaction.scrub(changed, secrets: [Self.secret]) == "[REDACTED]NANDU[REDACTED]")
    }

    /// A run that starts or ends inside a multi-byte character takes the whole character,
    /// so the output stays valid UTF-8 and no lone byte of the secret is left.
    @Test func aRunCutInsideACharacterTakesTheWholeCharacter() {
        // "ä" is C3 A4 and "¤" is C2 A4: the body's "¤0123456789a" shares 12 bytes with the
        // secret, from the second byte of a character on; the whole "¤" goes.
        #expect(Redaction.scrub("x¤0123456789ay", secrets: ["ä0123456789abc"]) == "x[REDACTED]y")
        // "ä0123456789ab" and "é": the match ends on C3, the first byte of "é" (C3 A9).
        #expect(Redaction.scrub("0123456789abéz", secrets: ["0123456789abä"]) == "[REDACTED]z")
    }

    @Test func shortSecretsAndOtherTextAreLeftAlone() {
        #expect(Redaction.scrub("a b c", secrets: ["b"]) == "a b c", "shorter than 4 bytes")
        #expect(Redaction.scrub("sent AbCd!", secrets: ["abcd"]) == "sent [REDACTED]!", "4 to 11 bytes: the whole secret, any case")
        #expect(Redaction.scrub("sent abc", secrets: ["abcd"]) == "sent abc")
        let text = #"{"a":"x\u0041y","b":"&amp;&#65;%41","c":"50%","d":"\q &nope; &#;"}"#
        #expect(Redaction.scrub(text, secrets: ["unrelated-secret-value"]) == text, "escapes that are no secret's stay as they were")
        #expect(Redaction.scrub("", secrets: [Self.secret]) == "")
        #expect(Redaction.scrub("nothing here", secrets: []) == "nothing here")
    }

    /// Parts of a secret ("Bearer xyz", "a=b; c=d") 8 bytes or longer are matched alone,
    /// transformed too.
    @Test func aPartEchoedAloneIsRemoved() {
        #expect(Redaction.scrub("you sent abcdefgh12", secrets: ["Bearer abcdefgh12"]) == "you sent [REDACTED]")
        #expect(Redaction.scrub("you sent ABCDEFGH12", secrets: ["Bearer abcdefgh12"]) == "you sent [REDACTED]")
        #expect(Redaction.scrub("sid%3Dcookie-value-12345", secrets: ["sid=cookie-value-12345"]) == "[REDACTED]")
    }

    /// The cost is linear in the input: a 64 KiB body of escapes and near misses (every
    /// window's first 11 bytes) against eight 64-byte secrets is scanned well within a
    /// second, and one scrubber serves many pieces.
    @Test func scanningAResponseBodyIsLinear() {
        let secrets = (0..<8).map { index in String(repeating: "s\(index)-0123456789abcdefghijklmnopqrstuvwxyz", count: 2).prefix(64) }.map(String.init)
        var body: [UInt8] = []
        while body.count < 65_536 {
            body += Array(secrets[body.count % 8].utf8.prefix(11)) + Array("%41&amp;\\u0041".utf8)
        }
        let scrubber = SecretScrubber(secrets: secrets)
        let clock = ContinuousClock()
        var output: [UInt8] = []
        let elapsed = clock.measure { output = scrubber.scrub(body) }
        #expect(output == body, "near misses are not secrets")
        #expect(elapsed < .seconds(2), "\(elapsed) for 64 KiB")
        var withEcho = body
        withEcho.insert(contentsOf: Array(secrets[3].uppercased().utf8), at: 30_000)
        let scrubbed = String(decoding: scrubber.scrub(withEcho), as: UTF8.self)
        #expect(scrubbed.contains(Redaction.placeholder) && !scrubbed.contains(secrets[3].uppercased().prefix(12)))
    }
}
