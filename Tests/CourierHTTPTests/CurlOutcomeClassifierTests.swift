import CourierCore
import CCurl
import Testing
@testable import CourierHTTP

@Suite("Outcome classification")
struct CurlOutcomeClassifierTests {
    private static let summary = HTTPResponseSummary(status: 201, headers: [], bodyPrefix: [1], bodyTruncated: false)

    private func classify(
        _ code: CURLcode, started: Bool = false, refusal: String? = nil, truncated: Bool = false, resend: Bool = false
    ) -> TransportOutcome {
        CurlOutcomeClassifier.outcome(
            code: code,
            evidence: .init(requestStarted: started, refusal: refusal, bodyTruncated: truncated, resendRefused: resend),
            response: { Self.summary }
        )
    }

    private func kind(_ outcome: TransportOutcome) -> String {
        switch outcome {
        case .notSent: return "notSent"
        case .blocked: return "blocked"
        case .refusedByConfiguration: return "refusedByConfiguration"
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
        #expect(kind(classify(CURLE_OUT_OF_MEMORY, started: true)) == "connectionLost")
    }

    @Test func messagesCarryLibcurlsTextAndCode() {
        guard case .notSent(let message) = classify(CURLE_COULDNT_CONNECT) else {
            Issue.record("expected notSent")
            return
        }
        #expect(message.contains("(curl 7)"))
    }
}
