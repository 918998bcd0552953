import CourierCore
import Testing

@Suite struct DestinationTests {
    @Test(arguments: [
        ("https://api.example.com/v1/hooks?x=1", "https://api.example.com:443"),
        ("http://api.example.com", "http://api.example.com:80"),
        ("HTTPS://API.Example.COM:8443/path", "https://api.example.com:8443"),
        ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
        ("https://[2001:DB8:0:0::1]/a", "https://[2001:db8::1]:443"),
        ("http://example.com:/x", "http://example.com:80"),
        ("http://example.com#frag", "http://example.com:80"),
        ("http://example.com?q", "http://example.com:80"),
        ("http://my_host.internal.:81", "http://my_host.internal:81"),  // the root's dot dropped (issue 43)
        ("http://0.0.0.0/", "http://0.0.0.0:80"),
        ("https://255.255.255.255:1", "https://255.255.255.255:1"),
        ("http://10.0.0.1.example/", "http://10.0.0.1.example:80"),
    ])
    func derives(url: String, expected: String) throws {
        #expect(try Destination.derive(fromURL: url) == expected)
    }

    @Test(arguments: [
        ("", "must not be empty"),
        ("example.com/path", "no scheme"),
        ("ftp://example.com/", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("http:example.com", "must have //"),
        ("http://", "no host"),
        ("http:///path", "no host"),
        ("http://:80/", "no host"),
        ("http://user:pass@example.com/", "credentials"),
        ("http://example.com:0/", "port"),
        ("http://example.com:65536/", "port"),
        ("http://example.com:8o/", "port"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com/a\nb", "whitespace"),
        ("http://[::1/", "closing ]"),
        ("http://[::1]x/", "unexpected text"),
        ("http://[not-v6]/", "not a valid IPv6"),
        ("http://[fe80::1%25eth0]/", "not a valid IPv6"),
        ("http://[1.2.3.4]/", "not a valid IPv6"),
        ("http://exa%6dple.com/", "not a valid host name"),
        ("http://bücher.example/", "not a valid host name"),
        ("http://a..b/", "empty label"),
        ("http://999.1.1.1/", "not a valid IPv4"),
        ("http://1.2.3.04/", "not a valid IPv4"),
        ("http://1.2.3/", "not a valid IPv4"),
        ("http://1.2.3.4.5/", "not a valid IPv4"),
        ("http://1.2.3.256/", "not a valid IPv4"),
        ("http://.a/", "empty label"),
        ("http://a\u{301}.example/", "not a valid host name"),
        ("http://a:\u{301}80/", "port"),
    ])
    func rejectsNamingTheField(url: String, fragment: String) {
        do {
            _ = try Destination.derive(fromURL: url)
            Issue.record("\(url) should be rejected")
        } catch {
            #expect(error.field == "url")
            #expect(error.message.contains(fragment), "\(url): \(error.message)")
        }
    }

    @Test func credentialsAreNotEchoed() {
        do {
            try Destination.validateURL("https://bob:hunter2@example.com/", field: "line 3: url")
            Issue.record("expected an error")
        } catch {
            #expect(error.field == "line 3: url")
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func requestURLParts() throws {
        let u = try RequestURL("https://Example.com/x")
        #expect(u.scheme == "https" && u.host == "example.com" && u.port == 443)
        #expect(!u.hasExplicitPort && !u.isIPLiteral)
        let v6 = try RequestURL("http://[::1]:8080")
        #expect(v6.host == "::1" && v6.port == 8080 && v6.hasExplicitPort && v6.isIPLiteral)
        let v4 = try RequestURL("http://10.0.0.1")
        #expect(v4.isIPLiteral)
    }

    @Test func explicitDestinations() throws {
        #expect(try Destination.validate("partner-api") == "partner-api")
        #expect(throws: ValidationError.self) { try Destination.validate("") }
        #expect(throws: ValidationError.self) { try Destination.validate("a b") }
        #expect(throws: ValidationError.self) { try Destination.validate(String(repeating: "x", count: 513)) }
    }
}
