import CourierCore
import CCurl
import Testing
@testable import CourierHTTP

@Suite("Outcome classification")
struct CurlOutcomeClassifierTests {
    private static let summary = HTTPResponseSummary(status: 201, headers: [], bodyPrefix: [1], bodyTruncated: false)

    private func classify(
        _ code: CURLcode, started: Bool = false, refusal: String? = nil, truncated: Bool = false, resend: Bool = false,
        sent: Int = 0, received: Int = 0
    ) -> TransportOutcome {
        CurlOutcomeClassifier.outcome(
            code: code,
            evidence: .init(requestStarted: started, refusal: refusal, bodyTruncated: truncated, resendRefused: resend,
                            requestBytesSent: sent, responseHeaderBytes: received),
            response: { Self.summary }
        )
    }

    private func kind(_ outcome: TransportOutcome) -> String {
        switch outcome {
        case .notSent: return "notSent"
        case .blocked: return "blocked"
        case .refusedByConfiguration: return "refusedByConfiguration"
        case .withheld: return "withheld"
        case .timedOut(let connected, _): return connected ? "timedOut(connected)" : "timedOut(not connected)"
        case .connectionLost: return "connectionLost"
        case .response: return "response"
        case .cancelled(let maybeSent): return "cancelled(\(maybeSent))"
        }
    }

    @Test func successIsTheResponse() {
        #expect(classify(CURLE_OK, started: true) == .response(Self.summary))
    }

    @Test func writeErrorAfterTruncationIsStillTheResponse() {
        #expect(classify(CURLE_WRITE_ERROR, started: true, truncated: true) == .response(Self.summary))
        #expect(kind(classify(CURLE_WRITE_ERROR, started: true, truncated: false)) == "connectionLost")
    }

    @Test func guardRefusalIsBlockedNeverNotSent() {
        let message = "destination address 10.0.0.1 is private; pass --allow-private-networks to allow"
        #expect(classify(CURLE_COULDNT_CONNECT, refusal: message) == .refusedByConfiguration(message))
        #expect(classify(CURLE_ABORTED_BY_CALLBACK, refusal: message) == .refusedByConfiguration(message))
    }

    @Test func aRefusedAddressDoesNotSpoilASuccessOnAnotherAddress() {
        #expect(classify(CURLE_OK, started: true, refusal: "x") == .response(Self.summary))
    }

    @Test func refusedResendIsConnectionLost() {
        #expect(kind(classify(CURLE_ABORTED_BY_CALLBACK, started: true, resend: true)) == "connectionLost")
    }

    @Test func timeoutsSayWhetherTheRequestCouldHaveBeenSent() {
        #expect(kind(classify(CURLE_OPERATION_TIMEDOUT, started: false)) == "timedOut(not connected)")
        #expect(kind(classify(CURLE_OPERATION_TIMEDOUT, started: true)) == "timedOut(connected)")
    }

    @Test(arguments: [
        (CURLE_COULDNT_RESOLVE_HOST, "notSent"), (CURLE_COULDNT_CONNECT, "notSent"),
        (CURLE_SSL_CONNECT_ERROR, "notSent"), (CURLE_PEER_FAILED_VERIFICATION, "notSent"),
        (CURLE_SSL_CACERT_BADFILE, "notSent"), (CURLE_UNSUPPORTED_PROTOCOL, "blocked"),
        (CURLE_URL_MALFORMAT, "blocked"),
    ])
    func failuresBeforeSendingAreNeverMaybeSent(code: CURLcode, expected: String) {
        #expect(kind(classify(code, started: false)) == expected)
    }

    @Test(arguments: [CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2_STREAM])
    func failuresAfterSendingAreConnectionLost(code: CURLcode) {
        #expect(kind(classify(code, started: true)) == "connectionLost")
    }

    @Test func connectionFailuresBeforeTheRequestStartedAreNotSent() {
        #expect(kind(classify(CURLE_RECV_ERROR, started: false)) == "notSent")
        #expect(kind(classify(CURLE_OUT_OF_MEMORY, started: false)) == "notSent")
        #expect(kind(classify(CURLE_OUT_OF_MEMORY, started: true, sent: 120)) == "connectionLost")
    }

    /// Issue 18 item 4: a request libcurl could not build (a megabyte header) fails after
    /// the connection is ready, but nothing was written: refused on this side, never
    /// "maybe delivered", and no breaker evidence against a healthy destination.
    @Test func localFailuresWithNothingWrittenAreRefusedNotMaybeSent() {
        #expect(kind(classify(CURLE_OUT_OF_MEMORY, started: true)) == "blocked")
        #expect(kind(classify(CURLE_BAD_FUNCTION_ARGUMENT, started: true)) == "blocked")
        #expect(kind(classify(CURLE_OUT_OF_MEMORY, started: true, received: 40)) == "connectionLost")
        // A code that is not local keeps "maybe sent" whatever the counters say (HTTP/2 may not count).
        #expect(kind(classify(CURLE_SEND_ERROR, started: true)) == "connectionLost")
    }

    /// Issue 18 item 5: UNSUPPORTED_PROTOCOL after the request started is an answer that was
    /// not HTTP (HTTP/0.9, garbage): maybe delivered, never "refused to send".
    @Test func unsupportedProtocolAfterStartingIsMaybeDelivered() {
        #expect(kind(classify(CURLE_UNSUPPORTED_PROTOCOL, started: true, sent: 80, received: 0)) == "connectionLost")
        #expect(kind(classify(CURLE_UNSUPPORTED_PROTOCOL, started: true)) == "connectionLost")
        #expect(kind(classify(CURLE_UNSUPPORTED_PROTOCOL, started: false)) == "blocked")
    }

    @Test func messagesCarryLibcurlsTextAndCode() {
        guard case .notSent(let message) = classify(CURLE_COULDNT_CONNECT) else {
            Issue.record("expected notSent")
            return
        }
        #expect(message.contains("(curl 7)"))
    }
}
