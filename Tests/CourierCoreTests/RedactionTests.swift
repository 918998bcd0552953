import CourierCore
import Testing

@Suite struct RedactionTests {
    @Test(arguments: [
        "Authorization", "authorization", "Proxy-Authorization", "Cookie", "SET-COOKIE",
        "X-Api-Key", "X-Auth-Token", "X-Client-Secret", "X-Password", "Api-Key", "x-github-token", "Private-KEY",
        "webhook-signature", "Webhook-Signature",
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
