import CourierCore

/// Checks a request before libcurl sees it. Pure; returns the reason to refuse
/// (an outcome of `.blocked`, since such a request can never succeed) or `nil`.
/// Reasons name the field and never echo header values.
enum RequestValidation {
    static func refusal(for request: HTTPRequest) -> String? {
        if let reason = schemeRefusal(request.url) { return reason }
        if !isToken(request.method) {
            return "method is not a valid HTTP method token"
        }
        for header in request.headers {
            if !isToken(header.name) {
                return "header name is not a valid HTTP token"
            }
            if !header.value.utf8.allSatisfy(HeaderRules.isAllowedValueByte) {
                return "header \(header.name) has a value containing a control character"
            }
        }
        if request.timeout <= .zero {
            return "timeout must be greater than zero"
        }
        if let connect = request.connectTimeout, connect <= .zero {
            return "connectTimeout must be greater than zero"
        }
        return nil
    }

    /// Only `http://` and `https://` URLs are allowed (case-insensitive).
    static func schemeRefusal(_ url: String) -> String? {
        // Every request passes here: the usual URL is accepted from its bytes, without the
        // Character walk and the lowercased copy the refusals below need for their messages.
        if startsWithHTTPScheme(url) { return nil }
        guard let colon = url.firstIndex(of: ":") else {
            return "url has no scheme; only http and https are allowed"
        }
        let scheme = url[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else {
            let shown = scheme.count <= 16 && scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
                ? "\"\(scheme)\"" : "of this url"
            return "scheme \(shown) is not allowed; only http and https are allowed"
        }
        guard url[colon...].hasPrefix("://") else {
            return "url is malformed: expected \(scheme)://"
        }
        return nil
    }

    /// Whether `url` begins with `http://` or `https://` in any case, followed by an ASCII byte
    /// or nothing (a non-ASCII byte could be a combining mark that joins the last "/" into
    /// another Character, which ``schemeRefusal(_:)`` refuses).
    static func startsWithHTTPScheme(_ url: String) -> Bool {
        var bytes = url.utf8.makeIterator()
        for expected in "http".utf8 {
            guard let byte = bytes.next(), byte | 0x20 == expected else { return false }
        }
        var next = bytes.next()
        if let byte = next, byte | 0x20 == UInt8(ascii: "s") { next = bytes.next() }
        for expected in "://".utf8 {
            guard next == expected else { return false }
            next = bytes.next()
        }
        return next.map { $0 < 0x80 } ?? true
    }

    /// RFC 9110 token: one or more visible ASCII characters other than delimiters.
    static func isToken(_ s: String) -> Bool {
        guard !s.isEmpty else { return false }
        return s.utf8.allSatisfy { c in
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(c)
            }
        }
    }

    /// Milliseconds for libcurl, rounded up, at least 1.
    static func milliseconds(_ d: Duration) -> Int {
        let (seconds, attoseconds) = d.components
        let ms = seconds.multipliedReportingOverflow(by: 1000)
        if ms.overflow { return Int.max }
        let extra = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        let total = ms.partialValue.addingReportingOverflow(extra)
        return total.overflow ? Int.max : max(1, Int(total.partialValue))
    }
}
