import Foundation
import Glibc

extension FaultServer {
    /// The parts of a request head the server acts on.
    struct RequestHead {
        var method: String
        var target: String
        var headers: [(name: String, value: String)]
        var keepAlive: Bool
        var contentLength: Int?
        var chunked: Bool
        var expectsContinue: Bool
    }

    /// Serves one connection until it closes, errs, or a behaviour ends it.
    func serve(fd: Int32, connectionID: Int) {
        var reader = SocketReader(fd: fd)
        while true {
            let headBytes: [UInt8]
            switch reader.readHead(max: Self.maxHeadBytes) {
            case .closed:
                return
            case .tooLarge:
                _ = writeAll(fd, Self.simpleResponse(status: 431, close: true))
                return
            case .head(let bytes):
                headBytes = bytes
            }
            guard let head = Self.parseHead(headBytes) else {
                _ = writeAll(fd, Self.simpleResponse(status: 400, close: true))
                return
            }
            if head.expectsContinue && (head.chunked || (head.contentLength ?? 0) > 0) {
                guard writeAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }
            var body: [UInt8] = []
            if head.chunked {
                guard let decoded = reader.readChunkedBody(max: Self.maxBodyBytes) else {
                    _ = writeAll(fd, Self.simpleResponse(status: 400, close: true))
                    return
                }
                body = decoded
            } else if let length = head.contentLength, length > 0 {
                guard length <= Self.maxBodyBytes else {
                    _ = writeAll(fd, Self.simpleResponse(status: 413, close: true))
                    return
                }
                guard let bytes = reader.read(count: length) else { return }
                body = bytes
            }
            let request = RecordedRequest(
                method: head.method,
                path: head.target,
                headers: head.headers,
                body: body,
                arrivedAt: Date(),
                arrivalNanos: Self.monotonicNanos(),
                connectionID: connectionID
            )
            let (behavior, span) = record(request)
            let kept = perform(behavior, fd: fd, head: head, span: span, request: request)
            withState { $0.spans[span].endNanos = Self.monotonicNanos() }
            guard kept, head.keepAlive else { return }
        }
    }

    /// Stores the request, wakes waiters, and picks the behaviour for it.
    private func record(_ request: RecordedRequest) -> (Behavior, span: Int) {
        let path = request.pathWithoutQuery
        let behavior = withState { s -> (Behavior, span: Int) in
            s.requests.append(request)
            s.spans.append(RequestSpan(path: request.path, startNanos: request.arrivalNanos))
            let span = s.spans.count - 1
            if var script = s.scripted[path], !script.isEmpty {
                let next = script.removeFirst()
                s.scripted[path] = script.isEmpty ? nil : script
                return (next, span)
            }
            return (s.behaviors[path] ?? s.defaultBehavior, span)
        }
        condition.broadcast()
        return behavior
    }

    /// Answers per `behavior`. Returns `false` when the connection must close.
    private func perform(_ behavior: Behavior, fd: Int32, head: RequestHead, span: Int, request: RecordedRequest) -> Bool {
        let close = !head.keepAlive
        let withBody = head.method != "HEAD"
        switch behavior {
        case .respond(let status, let headers, let body):
            return writeAll(fd, Self.response(status: status, headers: headers, body: Array(body.utf8), close: close, withBody: withBody))
        case .html200:
            return writeAll(fd, Self.response(status: 200, headers: [("Content-Type", "text/html; charset=utf-8")],
                                              body: Array(Self.htmlBody.utf8), close: close, withBody: withBody))
        case .json200:
            return writeAll(fd, Self.response(status: 200, headers: [("Content-Type", "application/json")],
                                              body: Array(Self.jsonBody.utf8), close: close, withBody: withBody))
        case .dropConnection:
            return false
        case .raw(let bytes):
            _ = writeAll(fd, bytes)
            return false
        case .reply(let answer):
            return perform(answer(request), fd: fd, head: head, span: span, request: request)
        case .slow(let delay, let then):
            guard sleep(delay) else { return false }
            return perform(then, fd: fd, head: head, span: span, request: request)
        case .holdUntilReleased(let then):
            guard waitForRelease() else { return false }
            return perform(then, fd: fd, head: head, span: span, request: request)
        case .holdUntilClientLeaves(let delay, let then):
            switch watch(fd, for: delay) {
            case .clientLeft:
                withState { $0.spans[span].clientLeft = true }
                return false
            case .stopped:
                return false
            case .waited:
                return perform(then, fd: fd, head: head, span: span, request: request)
            }
        case .hugeBody(let bytes):
            let size = max(0, bytes)
            let headBytes = Self.response(status: 200, headers: [("Content-Type", "application/octet-stream")],
                                          body: [], close: close, withBody: false, contentLength: size)
            guard writeAll(fd, headBytes) else { return false }
            guard withBody else { return true }
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
            var left = size
            while left > 0 {
                let n = min(left, chunk.count)
                guard writeAll(fd, chunk[0..<n]) else { return false }
                left -= n
            }
            return true
        }
    }

    private enum WatchResult { case waited, clientLeft, stopped }

    /// Waits up to `delay` for the client to close `fd` (checked every 20 ms).
    private func watch(_ fd: Int32, for delay: Duration) -> WatchResult {
        let deadline = Self.monotonicNanos() + UInt64(Self.seconds(delay) * 1e9)
        while Self.monotonicNanos() < deadline {
            if withState({ $0.stopped }) { return .stopped }
            // 0x2000: POLLRDHUP (the peer closed its side), which Glibc does not export.
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN) | Int16(0x2000), revents: 0)
            if poll(&descriptor, 1, 20) > 0 {
                var byte: UInt8 = 0
                let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                if peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EINTR) || descriptor.revents & Int16(POLLHUP | POLLERR) != 0 {
                    return .clientLeft
                }
                if peeked > 0 { usleep(20_000) }
            }
        }
        return .waited
    }

    /// Waits `delay`; returns `false` if the server was stopped meanwhile.
    /// Waits for ``FaultServer/releaseHolds()``; false when the server stopped first.
    private func waitForRelease() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !state.stopped && !state.holdsReleased { condition.wait() }
        return !state.stopped
    }

    private func sleep(_ delay: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Self.seconds(delay))
        condition.lock()
        defer { condition.unlock() }
        while !state.stopped {
            if !condition.wait(until: deadline) { return true }
        }
        return false
    }

    private func writeAll<C: Collection>(_ fd: Int32, _ bytes: C) -> Bool where C.Element == UInt8 {
        let ok: Bool? = bytes.withContiguousStorageIfAvailable { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        return ok ?? writeAll(fd, Array(bytes))
    }

    // MARK: - Parsing and formatting (pure)

    static func parseHead(_ bytes: [UInt8]) -> RequestHead? {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name, value))
        }
        func values(_ name: String) -> [String] {
            headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map { $0.value.lowercased() }
        }
        let connection = values("Connection").flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        let http10 = requestLine[2] == "HTTP/1.0"
        let keepAlive = http10 ? connection.contains("keep-alive") : !connection.contains("close")
        var contentLength: Int?
        if let raw = values("Content-Length").first {
            guard let n = Int(raw), n >= 0 else { return nil }
            contentLength = n
        }
        return RequestHead(
            method: String(requestLine[0]),
            target: String(requestLine[1]),
            headers: headers,
            keepAlive: keepAlive,
            contentLength: contentLength,
            chunked: values("Transfer-Encoding").contains { $0.contains("chunked") },
            expectsContinue: values("Expect").contains("100-continue")
        )
    }

    static func response(
        status: Int, headers: [(String, String)], body: [UInt8], close: Bool, withBody: Bool, contentLength: Int? = nil
    ) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !(100..<200).contains(status) && status != 204 && status != 304 {
            head += "Content-Length: \(contentLength ?? body.count)\r\n"
        }
        head += close ? "Connection: close\r\n\r\n" : "\r\n"
        return Array(head.utf8) + (withBody ? body : [])
    }

    static func simpleResponse(status: Int, close: Bool) -> [UInt8] {
        response(status: status, headers: [], body: [], close: close, withBody: true)
    }
}

/// Buffered reads from a blocking socket, for the request parser.
struct SocketReader {
    enum Head { case head([UInt8]), closed, tooLarge }

    let fd: Int32
    private var buffer: [UInt8] = []
    private var position = 0
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init(fd: Int32) { self.fd = fd }

    /// Reads more bytes; `false` on end of stream, error or idle timeout.
    private mutating func fill() -> Bool {
        if position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        } else if position > 64 * 1024 {
            buffer.removeFirst(position)
            position = 0
        }
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            scratch.withUnsafeBytes { buffer.append(contentsOf: $0.prefix(n)) }
            return true
        }
    }

    /// Reads through the blank line ending a request head; returns the head without it.
    /// Leading empty lines (allowed between requests) are skipped.
    mutating func readHead(max limit: Int) -> Head {
        var checked = 0          // bytes after `position` already searched (offsets survive fill())
        while true {
            while buffer.count - position >= 2, buffer[position] == 13, buffer[position + 1] == 10 {
                position += 2
                checked = 0
            }
            if let end = Self.find([13, 10, 13, 10], in: buffer, from: position + max(0, checked - 3)) {
                if end - position > limit { return .tooLarge }
                let head = Array(buffer[position..<end])
                position = end + 4
                return .head(head)
            }
            checked = buffer.count - position
            if checked > limit { return .tooLarge }
            guard fill() else { return .closed }
        }
    }

    /// Reads exactly `count` bytes, or `nil` if the stream ends first.
    mutating func read(count: Int) -> [UInt8]? {
        while buffer.count - position < count {
            guard fill() else { return nil }
        }
        let bytes = Array(buffer[position..<position + count])
        position += count
        return bytes
    }

    /// Reads one CRLF-terminated line (without the CRLF), at most `max` bytes.
    mutating func readLine(max limit: Int) -> [UInt8]? {
        var checked = 0
        while true {
            if let end = Self.find([13, 10], in: buffer, from: position + max(0, checked - 1)) {
                let line = Array(buffer[position..<end])
                position = end + 2
                return line
            }
            checked = buffer.count - position
            if checked > limit { return nil }
            guard fill() else { return nil }
        }
    }

    /// Reads a chunked body and its trailers; `nil` if malformed, too large or cut off.
    mutating func readChunkedBody(max limit: Int) -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let line = readLine(max: 1024) else { return nil }
            let sizeText = String(decoding: line, as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else { return nil }
            if size == 0 { break }
            guard body.count + size <= limit, let chunk = read(count: size), let end = read(count: 2), end == [13, 10] else {
                return nil
            }
            body.append(contentsOf: chunk)
        }
        while true {                                // trailers, up to the blank line
            guard let line = readLine(max: 8 * 1024) else { return nil }
            if line.isEmpty { return body }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = Swift.max(0, start)
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] {
                var match = true
                for j in 1..<needle.count where haystack[i + j] != needle[j] { match = false; break }
                if match { return i }
            }
            i += 1
        }
        return nil
    }
}
