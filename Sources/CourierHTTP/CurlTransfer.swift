import CourierCore
import CCurl

/// One request in flight on the driver thread: its easy handle, its continuation,
/// and what libcurl's callbacks have observed. Touched only by the driver thread
/// (the callbacks run inside `curl_multi_perform` on that thread).
final class CurlTransfer {
    let id: UInt64
    let continuation: CheckedContinuation<TransportOutcome, Never>
    let easy: UnsafeMutableRawPointer
    var headerList: UnsafeMutablePointer<curl_slist>?

    /// The address guard, or `nil` when private networks are allowed.
    let addressGuard: (@Sendable (String) -> String?)?
    let maxBodyBytes: Int

    var body: [UInt8] = []
    var bodyTruncated = false
    var headers: [HTTPHeader] = []
    /// The pre-request callback ran: a connection exists and the request may now be sent.
    var requestStarted = false
    var preRequestCalls = 0
    /// libcurl wanted to resend the request on a fresh connection; we refused.
    var resendRefused = false
    /// The first address the guard refused for this transfer, as a full message.
    var refusal: String?

    init(
        id: UInt64,
        continuation: CheckedContinuation<TransportOutcome, Never>,
        easy: UnsafeMutableRawPointer,
        addressGuard: (@Sendable (String) -> String?)?,
        maxBodyBytes: Int
    ) {
        self.id = id
        self.continuation = continuation
        self.easy = easy
        self.addressGuard = addressGuard
        self.maxBodyBytes = maxBodyBytes
    }

    /// The message for an address the guard refused.
    static func refusalMessage(ip: String, category: String) -> String {
        "destination address \(ip) is \(category); pass --allow-private-networks to allow"
    }

    /// Judges `ip`; records and returns the refusal message, if any.
    func judge(ip: String) -> String? {
        guard let addressGuard, let category = addressGuard(ip) else { return nil }
        let message = Self.refusalMessage(ip: ip, category: category)
        if refusal == nil { refusal = message }
        return message
    }

    // MARK: - Callbacks (driver thread)

    /// Appends body bytes up to the cap. Returns `false` once the cap is exceeded,
    /// which stops the transfer; the prefix is then reported as truncated.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let room = maxBodyBytes - body.count
        if bytes.count <= room {
            body.append(contentsOf: bytes)
            return true
        }
        if room > 0 { body.append(contentsOf: bytes.prefix(room)) }
        bodyTruncated = true
        return false
    }

    /// Receives one raw header line (status lines and the blank line included).
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 13 || bytes[end - 1] == 10 { end -= 1 }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)[...]
        if line.hasPrefix("HTTP/") {
            headers.removeAll(keepingCapacity: true)     // a new response (1xx, then final)
            return
        }
        if line.isEmpty { return }
        if let first = line.first, first == " " || first == "\t" {
            if !headers.isEmpty {                          // obsolete line folding
                headers[headers.count - 1].value += " " + Self.trimmed(line)
            }
            return
        }
        guard let colon = line.firstIndex(of: ":"), headers.count < 500 else { return }
        headers.append(HTTPHeader(
            name: String(line[..<colon]),
            value: Self.trimmed(line[line.index(after: colon)...])
        ))
    }

    private static func trimmed(_ s: Substring) -> String {
        var s = s
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
