import CCurl
import CourierCore
import Foundation

/// One blocking HTTP POST at a time on a reused libcurl easy handle (its connection kept
/// alive between posts), for endpoints the operator configured, such as the OTLP collector of
/// the worker's span exporter. Not for job destinations: it has none of ``CurlTransport``'s
/// SSRF guard, address policy or response classification, and it blocks its caller's thread
/// for up to `timeout`, so it belongs on a thread of its own. Not thread-safe: one owner.
public final class CurlPoster: @unchecked Sendable {
    /// What one post came to.
    public enum Outcome: Sendable, Equatable {
        /// The server answered with this status.
        case status(Int)
        /// No answer: the connection failed or timed out (libcurl's message).
        case failed(String)
    }

    private let easy: UnsafeMutableRawPointer?
    private let userAgent: String

    public init(userAgent: String = "courier-jobworker") {
        self.userAgent = userAgent
        easy = curlGlobalSetup == CURLE_OK ? curl_easy_init() : nil
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
    }

    /// Posts `body` to `url` with `headers`, giving up after `timeout` (connecting after at
    /// most `timeout` too). The response body is read and discarded.
    public func post(url: String, headers: [HTTPHeader], body: [UInt8], timeout: Duration) -> Outcome {
        guard let h = easy else { return .failed("libcurl could not be set up") }
        let ms = max(1, Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, "\(header.name): \(header.value)") }
        defer { curl_slist_free_all(list) }
        var failed: CURLcode = CURLE_OK
        func check(_ code: CURLcode) { if failed == CURLE_OK { failed = code } }
        check(courier_easy_setopt_string(h, CURLOPT_URL, url))
        check(courier_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1))
        check(courier_easy_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(courier_easy_setopt_long(h, CURLOPT_FOLLOWLOCATION, 0))
        check(courier_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, ms))
        check(courier_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, ms))
        check(courier_easy_setopt_string(h, CURLOPT_USERAGENT, userAgent))
        check(courier_easy_setopt_long(h, CURLOPT_POST, 1))
        check(courier_easy_setopt_offt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
        if body.isEmpty {
            check(courier_easy_setopt_string(h, CURLOPT_COPYPOSTFIELDS, ""))
        } else {
            check(body.withUnsafeBytes { raw in
                courier_easy_setopt_pointer(h, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
            })
        }
        check(courier_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list))
        check(courier_easy_setopt_write_cb(h, curlPosterDiscard))
        guard failed == CURLE_OK else { return .failed(String(cString: curl_easy_strerror(failed))) }
        let code = curl_easy_perform(h)
        // The header list is freed after this call: libcurl must not keep a pointer to it.
        _ = courier_easy_setopt_slist(h, CURLOPT_HTTPHEADER, nil)
        guard code == CURLE_OK else { return .failed(String(cString: curl_easy_strerror(code))) }
        var status = 0
        _ = courier_easy_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        return .status(status)
    }
}

/// Reads and drops a response body.
private let curlPosterDiscard: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { _, size, count, _ in
    size * count
}
