import CourierCore
import CourierHTTP
import CourierStore
@testable import CourierWorker
import Foundation
import Testing

/// The headers of a built request: the stored ones (read with the claimed row), secrets
/// resolved, and a Content-Type for a body that has none.
@Suite struct RequestHeadersTests {
    struct UnusedTransport: HTTPTransport {
        func send(_ request: HTTPRequest) async -> TransportOutcome { .blocked("not used") }
    }

    let handler = HTTPJobHandler(transport: UnusedTransport(),
                                 secrets: SecretResolver(environment: ["COURIER_SECRET_TOKEN": "s3cret", "COURIER_SECRET_TOKEN_DESTINATIONS": "*"], directory: nil),
                                 now: { Date(timeIntervalSince1970: 1_800_000_000) })

    func request(body: String?, headers: String = "{}") throws -> HTTPRequest {
        let job = ClaimedJob(id: 1, attempt: 1, destination: "http://127.0.0.1:9", url: "http://127.0.0.1:9/hook",
                             headersJSON: headers, body: body, idempotencyKey: nil)
        return try handler.buildRequest(job).get().request
    }

    func contentType(_ request: HTTPRequest) -> String? {
        request.headers.first { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }?.value
    }

    @Test(arguments: [#"{"event":"paid"}"#, "[1,2]", "42", #""text""#, " null "])
    func aJSONBodyIsSentAsJSON(_ body: String) throws {
        #expect(contentType(try request(body: body)) == "application/json")
    }

    @Test(arguments: ["hello", #"{"event":"paid",}"#, "{", "1e", ""])
    func anyOtherBodyIsSentAsText(_ body: String) throws {
        #expect(contentType(try request(body: body)) == "text/plain; charset=utf-8")
    }

    @Test func noBodyNoContentTypeAndAStoredOneWins() throws {
        #expect(contentType(try request(body: nil)) == nil)
        let stored = try request(body: "{}", headers: #"{"content-type":"application/vnd.api+json"}"#)
        #expect(contentType(stored) == "application/vnd.api+json")
        #expect(stored.headers.filter { $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame }.count == 1)
    }

    @Test func storedHeadersAreSentInNameOrderWithSecretsResolved() throws {
        let built = try request(body: nil, headers: #"{"X-B":"2","Authorization":{"secret":"TOKEN"},"X-A":"1"}"#)
        #expect(built.headers.map(\.name) == ["Authorization", "X-A", "X-B"])
        #expect(built.headers.map(\.value) == ["s3cret", "1", "2"])
    }
}
