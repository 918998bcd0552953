import CourierCore
import CourierHTTP
import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The request-building step of a signed job, with the clock and the secrets injected.
@Suite struct WebhookSigningTests {
    static let specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// Never called: these tests only build requests.
    struct UnusedTransport: HTTPTransport {
        func send(_ request: HTTPRequest) async -> TransportOutcome { .blocked("not used") }
    }

    /// Every secret given is bound to every destination (`*`), unless `bound` is false.
    func handler(_ environment: [String: String], bound: Bool = true) -> HTTPJobHandler {
        var bindings = environment
        if bound { for name in environment.keys { bindings[name + "_DESTINATIONS"] = "*" } }
        return HTTPJobHandler(transport: UnusedTransport(), secrets: SecretResolver(environment: bindings, directory: nil),
                       now: { Date(timeIntervalSince1970: 1614265330.75) })
    }

    func job(own: String? = nil, destinationDefault: String? = nil, key: String? = "msg_p5jXN8AQM9LWM0D4loKWxJek",
             headers: String = "{}") -> ClaimedJob {
        ClaimedJob(id: 41, attempt: 1, destination: "http://127.0.0.1:9", url: "http://127.0.0.1:9/hook",
                   headersJSON: headers, body: #"{"test": 2432232314}"#, idempotencyKey: key,
                   signingSecret: own, destinationSigningSecret: destinationDefault)
    }

    func value(_ request: HTTPRequest, _ name: String) -> String? {
        request.headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    @Test func aSignedJobCarriesTheSpecificationsSignatureAtTheInjectedTime() throws {
        let request = try handler(["COURIER_SECRET_SPEC": Self.specSecret]).buildRequest(job(own: "SPEC")).get().request
        #expect(value(request, "webhook-id") == "msg_p5jXN8AQM9LWM0D4loKWxJek")
        #expect(value(request, "webhook-timestamp") == "1614265330")
        #expect(value(request, "webhook-signature") == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(value(request, "Idempotency-Key") == "msg_p5jXN8AQM9LWM0D4loKWxJek")
    }

    @Test func theDestinationsDefaultSignsWhenTheJobNamesNoneAndTheJobsOwnWins() throws {
        let h = handler(["COURIER_SECRET_SPEC": Self.specSecret, "COURIER_SECRET_OTHER": "whsec_" + Data(repeating: 9, count: 32).base64EncodedString()])
        let byDefault = try h.buildRequest(job(destinationDefault: "SPEC")).get().request
        #expect(value(byDefault, "webhook-signature") == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let own = try h.buildRequest(job(own: "SPEC", destinationDefault: "OTHER")).get().request
        #expect(value(own, "webhook-signature") == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let other = try h.buildRequest(job(own: "OTHER", destinationDefault: "SPEC")).get().request
        #expect(value(other, "webhook-signature") != value(own, "webhook-signature"))
    }

    @Test func anUnsignedJobHasNoWebhookHeaders() throws {
        let request = try handler(["COURIER_SECRET_SPEC": Self.specSecret]).buildRequest(job()).get().request
        #expect(!request.headers.contains { $0.name.lowercased().hasPrefix("webhook-") })
    }

    @Test func storedHeadersOfTheSameNamesAreReplacedBySignedOnes() throws {
        let request = try handler(["COURIER_SECRET_SPEC": Self.specSecret])
            .buildRequest(job(own: "SPEC", headers: #"{"Webhook-Id": "forged", "webhook-signature": "v1,forged"}"#)).get().request
        #expect(request.headers.filter { $0.name.lowercased() == "webhook-id" }.map(\.value) == ["msg_p5jXN8AQM9LWM0D4loKWxJek"])
        #expect(request.headers.filter { $0.name.lowercased() == "webhook-signature" }.count == 1)
    }

    @Test func aJobWithoutAnIdempotencyKeyUsesOneDerivedFromItsID() throws {
        let request = try handler(["COURIER_SECRET_SPEC": Self.specSecret]).buildRequest(job(own: "SPEC", key: nil)).get().request
        #expect(value(request, "webhook-id") == "courier-job-41")
    }

    @Test func aSecretThatIsNotSetIsRefusedNamingIt() {
        guard case .failure(let refusal) = handler([:]).buildRequest(job(destinationDefault: "PARTNER_HOOKS")) else {
            Issue.record("built a request without its signing secret")
            return
        }
        #expect(refusal.message.contains("PARTNER_HOOKS"))
        #expect(refusal.message.contains("COURIER_SECRET_PARTNER_HOOKS"))
        #expect(refusal.message.contains("destination"))
        #expect(refusal.isLocal, "the same path as a missing header secret: this worker's configuration")
    }

    @Test func aSecretNotBoundToTheURLIsTheJobsFault() {
        let h = handler(["COURIER_SECRET_SPEC": Self.specSecret], bound: false)
        guard case .failure(let refusal) = h.buildRequest(job(own: "SPEC")) else {
            Issue.record("signed with a secret not bound to the destination")
            return
        }
        #expect(!refusal.isLocal)
        #expect(refusal.message.contains("may not be sent to"))
    }

    @Test func theSecretAndTheSignatureAreAmongTheValuesToScrub() throws {
        let built = try handler(["COURIER_SECRET_SPEC": Self.specSecret]).buildRequest(job(own: "SPEC")).get()
        #expect(built.secretValues.contains(Self.specSecret))
        #expect(built.secretValues.contains("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="))
    }

    @Test func aMalformedSecretIsRefusedWithoutItsValue() {
        let value = "Bearer sk_live_abcdefghijklmnop"
        guard case .failure(let refusal) = handler(["COURIER_SECRET_PARTNER_HOOKS": value]).buildRequest(job(own: "PARTNER_HOOKS")) else {
            Issue.record("signed with a malformed secret")
            return
        }
        #expect(refusal.message.contains("PARTNER_HOOKS"))
        #expect(refusal.message.contains("malformed"))
        #expect(refusal.isLocal)
        #expect(!refusal.message.contains("sk_live"))
        #expect(!refusal.message.contains("Bearer"))
    }

    @Test func aRefusalIsNoVerdictAboutTheDestination() {
        let refused = OutcomeClassifier.classify(.blocked("signing secret 'X' is not set"), expectContentType: nil, now: Date())
        #expect(refused.isLocalRefusal)
        #expect(!refused.countsAsBreakerFailure)
        let answered = OutcomeClassifier.classify(.response(HTTPResponseSummary(status: 403, headers: [], bodyPrefix: [])),
                                                  expectContentType: nil, now: Date())
        #expect(!answered.isLocalRefusal)
    }
}
