import CourierCore
import CCurl

/// Turns libcurl's result code and what the callbacks observed into a
/// ``TransportOutcome``. Pure, so each mapping is tested directly.
///
/// The line it draws is "certainly not delivered" against "maybe delivered": the
/// pre-request callback runs once a connection is ready and just before the request
/// is written, so a failure before it (`requestStarted == false`) cannot have reached
/// the server. Messages come from libcurl's fixed per-code texts, never from request
/// data, so they cannot contain header values.
enum CurlOutcomeClassifier {
    struct Evidence: Equatable {
        var requestStarted: Bool
        var refusal: String?
        var bodyTruncated: Bool
        var resendRefused: Bool
    }

    static func outcome(
        code: CURLcode,
        evidence: Evidence,
        response: () -> HTTPResponseSummary
    ) -> TransportOutcome {
        if code == CURLE_OK { return .response(response()) }
        if code == CURLE_WRITE_ERROR && evidence.bodyTruncated { return .response(response()) }
        // Every refusal of the address guard depends on this worker's --allow-private-networks.
        if let refusal = evidence.refusal { return .refusedByConfiguration(refusal) }
        if evidence.resendRefused {
            return .connectionLost("connection closed before a response arrived; the request may have been delivered")
        }
        let text = describe(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return evidence.requestStarted
                ? .timedOut(connected: true, "no complete response within the timeout")
                : .timedOut(connected: false, "could not connect within the timeout")
        case CURLE_UNSUPPORTED_PROTOCOL:
            return .blocked("scheme is not allowed; only http and https are allowed")
        case CURLE_URL_MALFORMAT:
            return .blocked("url is malformed")
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
