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
    /// The request's last-moment check (``HTTPRequest/mayStillSend``); nil always sends.
    let mayStillSend: (@Sendable () -> Bool)?
    /// The check said no: the request was not written.
    var withheld = false

    init(
        id: UInt64,
        continuation: CheckedContinuation<TransportOutcome, Never>,
        easy: UnsafeMutableRawPointer,
        addressGuard: (@Sendable (String) -> String?)?,
        maxBodyBytes: Int,
        mayStillSend: (@Sendable () -> Bool)? = nil
    ) {
        self.mayStillSend = mayStillSend
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
    /// Works on bytes: this runs for every header of every response.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 13 || bytes[end - 1] == 10 { end -= 1 }
        guard end > 0 else { return }
        if end >= 5, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50, bytes[4] == 0x2F {
            headers.removeAll(keepingCapacity: true)     // "HTTP/": a new response (1xx, then final)
            return
        }
        func text(_ from: Int, _ to: Int) -> String {
            var from = from, to = to
            while from < to, bytes[from] == 32 || bytes[from] == 9 { from += 1 }
            while to > from, bytes[to - 1] == 32 || bytes[to - 1] == 9 { to -= 1 }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self)
        }
        if bytes[0] == 32 || bytes[0] == 9 {
            if !headers.isEmpty {                          // obsolete line folding
                headers[headers.count - 1].value += " " + text(0, end)
            }
            return
        }
        guard headers.count < 500, let colon = bytes[..<end].firstIndex(of: 0x3A) else { return }
        headers.append(HTTPHeader(name: text(0, colon), value: text(colon + 1, end)))
    }
}
