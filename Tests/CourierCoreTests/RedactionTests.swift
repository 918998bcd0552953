import CourierCore
import Testing

@Suite struct RedactionTests {
    @Test(arguments: [
        "Authorization", "authorization", "Proxy-Authorization", "Cookie", "SET-COOKIE",
        "X-Api-Key", "X-Auth-Token", "X-Client-Secret", "X-Password", "Api-Key", "x-github-token", "Private-KEY",
    ])
    func sensitive(name: String) {
        #expect(Redaction.isSensitiveHeader(name))
    }

    @Test(arguments: ["Idempotency-Key", "idempotency-key", "Content-Type", "Accept", "User-Agent", "X-Request-Id", "Location"])
    func notSensitive(name: String) {
        #expect(!Redaction.isSensitiveHeader(name))
    }

    @Test func redactsValuesKeepingNamesAndOrder() {
        let headers = [
            HTTPHeader(name: "Authorization", value: "Bearer abc"),
            HTTPHeader(name: "Content-Type", value: "application/json"),
            HTTPHeader(name: "Idempotency-Key", value: "k-1"),
            HTTPHeader(name: "X-Api-Key", value: "xyz"),
        ]
        #expect(Redaction.redact(headers) == [
            HTTPHeader(name: "Authorization", value: "[REDACTED]"),
            HTTPHeader(name: "Content-Type", value: "application/json"),
            HTTPHeader(name: "Idempotency-Key", value: "k-1"),
            HTTPHeader(name: "X-Api-Key", value: "[REDACTED]"),
        ])
        #expect(Redaction.displayValue(name: "cookie", value: "a=b") == "[REDACTED]")
        #expect(Redaction.displayValue(name: "accept", value: "*/*") == "*/*")
    }
}

@Suite struct HTTPHeaderTests {
    @Test func lookupIsCaseInsensitive() {
        let r = HTTPResponseSummary(status: 200, headers: [HTTPHeader(name: "content-TYPE", value: "text/plain"), HTTPHeader(name: "Content-Type", value: "second")])
        #expect(r.contentType == "text/plain")
        #expect(r.header("CONTENT-TYPE") == "text/plain")
        #expect(r.header("Retry-After") == nil)
    }

    @Test func validation() throws {
        try HTTPHeader.validate(name: "X-Thing", value: "a b c")
        #expect(throws: ValidationError.self) { try HTTPHeader.validate(name: "Bad Name", value: "v") }
        #expect(throws: ValidationError.self) { try HTTPHeader.validate(name: "", value: "v") }
        do {
            try HTTPHeader.validate(name: "Authorization", value: "Bearer s3cret\r\nX-Injected: 1")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "headers")
            #expect(!error.description.contains("s3cret"))
        }
    }
}

@Suite struct HTTPMethodTests {
    @Test func idempotency() {
        for m in ["GET", "get", "Head", "OPTIONS", "PUT", "delete", "TRACE"] { #expect(HTTPMethod.isIdempotent(m), "\(m)") }
        for m in ["POST", "PATCH", "CONNECT", "PROPFIND", ""] { #expect(!HTTPMethod.isIdempotent(m), "\(m)") }
        #expect(HTTPMethod.put.isIdempotent)
        #expect(!HTTPMethod.post.isIdempotent)
    }

    @Test func parse() throws {
        #expect(try HTTPMethod.parse("post") == .post)
        #expect(try HTTPMethod.parse("PROPFIND").rawValue == "PROPFIND")
        for bad in ["", "GE T", "GET\r\n", "PO/ST", String(repeating: "A", count: 33)] {
            #expect(throws: ValidationError.self, "\(bad)") { try HTTPMethod.parse(bad) }
        }
        do {
            _ = try HTTPMethod.parse("G(T", field: "--method")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "--method")
        }
    }
}

/// Issue 18 items 2, 8 and 10: scrubbing raw bytes, query values, printable text.
@Suite struct RedactionHardeningTests {
    @Test(arguments: [
        ("https://a.example/x?api_key=k1&user=ann", "https://a.example/x?api_key=[REDACTED]&user=ann"),
        ("https://a.example/x?token=t&signature=s#part", "https://a.example/x?token=[REDACTED]&signature=[REDACTED]#part"),
        ("https://a.example/x?X-Amz-Signature=abc&X-Amz-Credential=c", "https://a.example/x?X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]"),
        ("https://a.example/x?api%5Fkey=k&sig=z&code=1", "https://a.example/x?api%5Fkey=[REDACTED]&sig=[REDACTED]&code=1"),
        ("https://a.example/x?idempotency-key=visible", "https://a.example/x?idempotency-key=visible"),
        ("https://a.example/x?flag&password=", "https://a.example/x?flag&password=[REDACTED]"),
        ("https://a.example/x", "https://a.example/x"),
        ("https://a.example/x#token=in-fragment", "https://a.example/x#token=in-fragment"),
    ])
    func queryValuesWithSecretNamesAreRedacted(url: String, expected: String) {
        #expect(Redaction.redactURL(url) == expected)
    }

    @Test func headersAndQueryNamesShareOneList() {
        for name in ["api_key", "access_token", "X-Signature", "client_secret", "Authorization", "passwd"] {
            #expect(Redaction.isSensitiveName(name) && Redaction.isSensitiveHeader(name), "\(name)")
        }
        #expect(!Redaction.isSensitiveName("Idempotency-Key"))
    }

    /// The old scrub ran on the escaped excerpt: a secret crossing the cut, or holding a
    /// quote, a backslash or non-ASCII bytes, survived. On raw bytes none does.
    @Test func aSecretIsScrubbedFromRawBytesBeforeTheExcerpt() {
        let secret = #"k"e\y-ü-0123456789abcdef"#
        let body = Array((String(repeating: "x", count: 55) + secret + "tail").utf8)
        let scrubbed = Redaction.scrub(body, secrets: [secret])
        let excerpt = Quoting.escape(bytes: scrubbed, limit: 64)
        #expect(!excerpt.contains("k\\\"e") && !excerpt.contains("0123") && !excerpt.contains("\\xC3"), "\(excerpt)")
        #expect(String(decoding: scrubbed, as: UTF8.self) == String(repeating: "x", count: 55) + "[REDACTED]tail")
        // A part of a secret echoed alone, and short secrets left alone.
        #expect(Redaction.scrub(Array("you sent abcdefgh12".utf8), secrets: ["Bearer abcdefgh12"]) == Array("you sent [REDACTED]".utf8))
        #expect(Redaction.scrub(Array("a b c".utf8), secrets: ["b"]) == Array("a b c".utf8))
    }

    @Test func printableEscapesEveryControlCharacter() {
        #expect(Quoting.printable("ok grüße") == "ok grüße")
        #expect(Quoting.printable("a\u{1B}[2J\r\n\t\u{7F}\u{9B}b") == #"a\e[2J\r\n\t\u{7F}\u{9B}b"#)
        #expect(Quoting.printableLines("one\ntwo\u{1B}") == "one\ntwo\\e")
    }
}
