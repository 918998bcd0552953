@testable import CourierStore
import CourierCore
import Foundation
import Testing

/// The byte-level checks of `EnqueueRequest.validate` must agree with the patterns
/// they replaced (the same patterns the SQL domains describe).
@Suite struct ValuePatternTests {
    static let samples: [String] = [
        "", "a", "A", "GET", "get", "M-SEARCH", "X_1", "1X", "-x", "x-", "a b", "a\tb", "a\n", "\na", "é", "É", "😀",
        "a:b", "a.b", "a/b", "application/json", "text/*", "*/*", "a/", "/b", "a/b/c", "text/html;charset=utf-8",
        "X-Api-Key", "!#$%&'*+.^_`|~-", "(x)", "x,y", "a=b", "secret.name-1_2", String(repeating: "A", count: 20),
        String(repeating: "A", count: 21), String(repeating: "q", count: 64), String(repeating: "q", count: 65),
        String(repeating: "s", count: 128), String(repeating: "s", count: 129), "A\u{301}", "q\u{0}",
    ]

    /// Whether `text` matches `pattern` as PostgreSQL reads it, where `$` is the end of
    /// the text; ICU's `$` also matches before a final newline, so it is written `\z` here.
    /// (The old Swift check used ICU's `$` and so let "default\n" through to the database.)
    static func matches(_ text: String, _ pattern: String) -> Bool {
        let anchored = pattern.hasSuffix("$") ? String(pattern.dropLast()) + #"\z"# : pattern
        return text.range(of: anchored, options: .regularExpression) != nil
    }

    @Test(arguments: samples)
    func byteChecksAgreeWithTheirPatterns(text: String) {
        #expect(EnqueueRequest.isMethodToken(text) == Self.matches(text, #"^[A-Z][A-Z0-9_-]{0,19}$"#))
        #expect(EnqueueRequest.isHeaderName(text) == Self.matches(text, #"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"#))
        #expect(EnqueueRequest.isSecretName(text) == Self.matches(text, #"^[A-Za-z0-9_.-]{1,128}$"#))
        #expect(QueueName.isValid(text) == Self.matches(text, QueueName.pattern))
        #expect(EnqueueRequest.isMediaType(text) == Self.matches(text, #"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+*-]+$"#))
    }

    @Test func aMethodIsCheckedAfterASCIIUppercasingOnly() {
        func methodError(_ method: String) -> String? {
            var request = EnqueueRequest(url: "https://e.com")
            request.method = method
            do { try request.validate(); return nil } catch { return error.field }
        }
        #expect(methodError("patch") == nil)
        // 'ß'.uppercased() is "SS": Unicode upper-casing would have let this through.
        #expect(methodError("poßt") == "method")
    }

    @Test func aNULInTheBodyIsNamedBeforeTheDatabaseSeesIt() {
        var request = EnqueueRequest(url: "https://e.com")
        request.body = "a\u{0}b"
        #expect(throws: CourierCore.ValidationError.self) { try request.validate() }
        do { try request.validate() } catch { #expect(error.field == "body") }
    }
}
