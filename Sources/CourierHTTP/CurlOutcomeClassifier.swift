import CourierCore
import CCurl

/// Turns libcurl's result code and what the callbacks observed into a
/// ``TransportOutcome``. Pure, so each mapping is tested directly.
///
/// The line it draws is "certainly not delivered" against "maybe delivered": the
/// pre-request callback runs once a connection is ready and just before the request
/// is written, so a failure before it (`requestStarted == false`) cannot have reached
/// the server. After it, what libcurl counted decides, not the code's name alone: a
/// code that names a local failure (out of memory, a request libcurl could not build,
/// such as one with a megabyte header) with no request byte written and no response
/// byte read is "refused to send" (never sent, and not the destination's fault, so the
/// breaker does not count it); a code that names the scheme or URL (`UNSUPPORTED_PROTOCOL`,
/// which is also what an HTTP/0.9 or garbage answer yields) is "refused to send" only
/// before the request started, and "maybe delivered" after. Messages come from
/// libcurl's fixed per-code texts, never from request data, so they cannot contain
/// header values.
enum CurlOutcomeClassifier {
    struct Evidence: Equatable {
        var requestStarted: Bool
        var refusal: String?
        var bodyTruncated: Bool
        var resendRefused: Bool
        /// The request's `mayStillSend` said no before anything was written.
        var withheld = false
        /// CURLINFO_REQUEST_SIZE: request bytes libcurl wrote to the connection.
        var requestBytesSent: Int = 0
        /// CURLINFO_HEADER_SIZE: response header bytes libcurl read.
        var responseHeaderBytes: Int = 0

        /// Whether anything of this request can have reached the server.
        var anythingSent: Bool { requestStarted && (requestBytesSent > 0 || responseHeaderBytes > 0) }
    }

    /// Codes for failures on this side of the connection.
    static let localFailures: Set<UInt32> = [
        CURLE_OUT_OF_MEMORY.rawValue, CURLE_BAD_FUNCTION_ARGUMENT.rawValue, CURLE_FAILED_INIT.rawValue,
        CURLE_READ_ERROR.rawValue, CURLE_ABORTED_BY_CALLBACK.rawValue,
    ]

    static func outcome(
        code: CURLcode,
        evidence: Evidence,
        response: () -> HTTPResponseSummary
    ) -> TransportOutcome {
        if code == CURLE_OK { return .response(response()) }
        if code == CURLE_WRITE_ERROR && evidence.bodyTruncated { return .response(response()) }
        // Every refusal of the address guard depends on this worker's --allow-private-networks.
        if let refusal = evidence.refusal { return .refusedByConfiguration(refusal) }
        if evidence.withheld { return .withheld("withheld by the sender just before the request was written") }
        if evidence.resendRefused {
            return .connectionLost("connection closed before a response arrived; the request may have been delivered")
        }
        let text = describe(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return evidence.requestStarted
                ? .timedOut(connected: true, "no complete response within the timeout")
                : .timedOut(connected: false, "could not connect within the timeout")
        case CURLE_UNSUPPORTED_PROTOCOL where evidence.requestStarted:
            // The connection was made and the request may have gone out: the answer was not HTTP/1.1 or 2.
            return .connectionLost("the server's answer was not HTTP the request can be judged by: \(text)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return .blocked("scheme is not allowed; only http and https are allowed")
        case CURLE_URL_MALFORMAT:
            return .blocked("url is malformed")
        case _ where evidence.requestStarted && localFailures.contains(code.rawValue) && !evidence.anythingSent:
            // Refused on this side, never sent: permanent, and no evidence against the destination.
            return .blocked("the request could not be built or sent on this side (nothing was written): \(text)")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .notSent("could not resolve host: \(text)")
        case CURLE_COULDNT_CONNECT:
            return .notSent("could not connect: \(text)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_USE_SSL_FAILED:
            return .notSent("TLS failure: \(text)")
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
             CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3:
            return evidence.requestStarted
                ? .connectionLost("connection lost: \(text)")
                : .notSent("connection failed before the request was sent: \(text)")
        default:
            return evidence.requestStarted
                ? .connectionLost("transfer failed: \(text)")
                : .notSent("transfer failed before the request was sent: \(text)")
        }
    }

    /// libcurl's fixed description of a result code, with its number.
    static func describe(_ code: CURLcode) -> String {
        let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "unknown error"
        return "\(text) (curl \(code.rawValue))"
    }
}
