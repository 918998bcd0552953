extension HTTPServer {
    /// A parsed request: its head, and its body when the server accepts bodies
    /// (``Limits/maxBodyBytes`` above 0; the length must be given by `Content-Length`).
    public struct Request: Sendable, Equatable {
        public var method: String
        /// The path without its query string.
        public var path: String
        /// The query string, without `?`, when there is one.
        public var query: String?
        /// `HTTP/1.0` or `HTTP/1.1`.
        public var version: String
        /// The header fields in the order received, values trimmed of spaces and tabs.
        public var headers: [Response.Header]
        /// The body (empty when there was none, or when the server accepts no bodies).
        public var body: [UInt8]
        /// The numeric address of the client's end of the connection (`203.0.113.9`,
        /// `::1`), set by the server; nil when unknown. Behind a proxy it is the proxy's.
        public var peer: String?

        public init(method: String, path: String, query: String? = nil, version: String = "HTTP/1.1",
                    headers: [Response.Header] = [], body: [UInt8] = [], peer: String? = nil) {
            self.method = method
            self.path = path
            self.query = query
            self.version = version
            self.headers = headers
            self.body = body
            self.peer = peer
        }

        /// The first value of header `name` (compared case-insensitively).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What the handler answers. The server adds Content-Length, Connection: close
    /// and Cache-Control.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        /// Extra header lines, e.g. `("Allow", "GET, HEAD")`.
        public var headers: [Header]

        public struct Header: Sendable, Equatable {
            public var name: String
            public var value: String
            public init(_ name: String, _ value: String) { self.name = name; self.value = value }
        }

        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8], headers: [Header] = []) {
            self.status = status
            self.contentType = contentType
            self.body = body
            self.headers = headers
        }

        public init(status: Int, text: String, headers: [Header] = []) {
            self.init(status: status, body: Array(text.utf8), headers: headers)
        }

        /// The status line, headers and body as sent (the body left out for HEAD).
        public func serialized(includeBody: Bool = true) -> [UInt8] {
            var head = "HTTP/1.1 \(status) \(Self.reason(for: status))\r\n"
            head += "Content-Type: \(contentType)\r\n"
            head += "Content-Length: \(body.count)\r\n"
            head += "Cache-Control: no-store\r\n"
            for header in headers { head += "\(header.name): \(header.value)\r\n" }
            head += "Connection: close\r\n\r\n"
            return Array(head.utf8) + (includeBody ? body : [])
        }

        static func reason(for status: Int) -> String {
            switch status {
            case 200: "OK"
            case 201: "Created"
            case 204: "No Content"
            case 303: "See Other"
            case 302: "Found"
            case 401: "Unauthorized"
            case 411: "Length Required"
            case 413: "Content Too Large"
            case 403: "Forbidden"
            case 400: "Bad Request"
            case 404: "Not Found"
            case 405: "Method Not Allowed"
            case 408: "Request Timeout"
            case 431: "Request Header Fields Too Large"
            case 500: "Internal Server Error"
            case 503: "Service Unavailable"
            case 505: "HTTP Version Not Supported"
            default: "Status"
            }
        }
    }

    /// The state of a request head read so far.
    public enum HeadParse: Sendable, Equatable {
        /// No blank line yet and still within the size limit: read more.
        case incomplete
        /// Complete and well formed.
        case request(Request)
        /// Answer with this status and close (400, 431, 505).
        case reject(status: Int, message: String)
    }

    /// Parses the bytes received so far. Pure: the server feeds it every time more arrives.
    /// Lines may end in CRLF or a bare LF; the head ends at the first empty line.
    public static func parseHead(_ bytes: [UInt8], maxHeaderBytes: Int) -> HeadParse {
        let tooLarge = HeadParse.reject(status: 431, message: "request header larger than \(maxHeaderBytes) bytes")
        guard let end = headEnd(bytes) else {
            // A bad request line is refused as soon as it is complete, without waiting for the rest.
            if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")),
               case .failure(let reject) = parseRequestLine(trimCR(bytes[..<newline])) {
                return reject.parse
            }
            return bytes.count > maxHeaderBytes ? tooLarge : .incomplete
        }
        if end > maxHeaderBytes { return tooLarge }
        var lines = bytes[..<end].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(trimCR)
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let requestLine = lines.first else { return .reject(status: 400, message: "empty request line") }
        var request: Request
        switch parseRequestLine(requestLine) {
        case .success(let parsed): request = parsed
        case .failure(let reject): return reject.parse
        }
        for line in lines.dropFirst() {
            // Lines without a colon, and obs-fold continuation lines, are refused.
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon != line.startIndex,
                  line.first != UInt8(ascii: " "), line.first != UInt8(ascii: "\t") else {
                return .reject(status: 400, message: "malformed header line")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            var value = line[line.index(after: colon)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            request.headers.append(Response.Header(name, String(decoding: value, as: UTF8.self)))
        }
        return .request(request)
    }

    /// Parses the bytes received so far as a head and, when `maxBodyBytes` is above 0, the
    /// body its `Content-Length` announces (at most `maxBodyBytes`, else 413; a chunked body
    /// is refused with 411). With `maxBodyBytes` 0 any body is ignored, as before bodies were read.
    public static func parseRequest(_ bytes: [UInt8], maxHeaderBytes: Int, maxBodyBytes: Int) -> HeadParse {
        let head = parseHead(bytes, maxHeaderBytes: maxHeaderBytes)
        guard maxBodyBytes > 0, case .request(var request) = head, let end = headEnd(bytes) else { return head }
        if request.header("transfer-encoding") != nil {
            return .reject(status: 411, message: "send the body with Content-Length, not Transfer-Encoding")
        }
        let lengths = request.headers.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        guard let text = lengths.first else { return head }
        guard Set(lengths).count == 1, !text.isEmpty, text.count <= 12, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let length = Int(text) else {
            return .reject(status: 400, message: "bad Content-Length")
        }
        if length > maxBodyBytes { return .reject(status: 413, message: "request body larger than \(maxBodyBytes) bytes") }
        if bytes.count - end < length { return .incomplete }
        request.body = Array(bytes[end..<(end + length)])
        return .request(request)
    }

    struct Rejection: Error {
        var status: Int
        var message: String
        var parse: HeadParse { .reject(status: status, message: message) }
    }

    /// `METHOD /path[?query] HTTP/1.x`.
    static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<Request, Rejection> {
        if line.isEmpty { return .failure(Rejection(status: 400, message: "empty request line")) }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return .failure(Rejection(status: 400, message: "the request line must be METHOD PATH HTTP/1.1"))
        }
        let method = parts[0], target = parts[1], version = parts[2]
        guard !method.isEmpty, method.count <= 16,
              method.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            return .failure(Rejection(status: 400, message: "bad method"))
        }
        guard target.first == UInt8(ascii: "/"), target.count <= 2048, target.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            return .failure(Rejection(status: 400, message: "bad request target"))
        }
        let versionText = String(decoding: version, as: UTF8.self)
        guard versionText.count == 8, versionText.hasPrefix("HTTP/") else {
            return .failure(Rejection(status: 400, message: "bad HTTP version"))
        }
        guard versionText == "HTTP/1.1" || versionText == "HTTP/1.0" else {
            return .failure(Rejection(status: 505, message: "only HTTP/1.0 and HTTP/1.1 are served"))
        }
        let targetText = String(decoding: target, as: UTF8.self)
        let split = targetText.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return .success(Request(method: String(decoding: method, as: UTF8.self), path: String(split[0]),
                                query: split.count > 1 ? String(split[1]) : nil, version: versionText))
    }

    private static func trimCR(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        line.last == UInt8(ascii: "\r") ? line.dropLast() : line
    }

    /// The index just past the blank line that ends the head, if it arrived.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while let newline = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) {
            let next = newline + 1
            if next < bytes.count, bytes[next] == UInt8(ascii: "\n") { return next + 1 }
            if next + 1 < bytes.count, bytes[next] == UInt8(ascii: "\r"), bytes[next + 1] == UInt8(ascii: "\n") { return next + 2 }
            index = next
        }
        return nil
    }
}
