import CourierStore
import Testing

/// A claimed job's headers are read once, with the row, into typed values.
struct StoredHeaderTests {
    @Test func storedHeadersAreReadInNameOrderAsValuesAndSecretReferences() {
        var request = EnqueueRequest(url: "https://e.com/hook")
        request.headers = [("X-B", .literal("two")), ("Authorization", .secret(name: "API_TOKEN")), ("X-A", .literal("one"))]
        let job = ClaimedJob(id: 1, attempt: 1, destination: "https://e.com:443", url: request.url, headersJSON: request.headersJSON)
        #expect(job.headers == [
            StoredHeader(name: "Authorization", value: .secret(name: "API_TOKEN")),
            StoredHeader(name: "X-A", value: .literal("one")),
            StoredHeader(name: "X-B", value: .literal("two")),
        ])
    }

    @Test func noHeadersAndOddEntries() {
        #expect(ClaimedJob(id: 1, attempt: 1, destination: "https://e.com:443", url: "https://e.com/").headers.isEmpty)
        let job = ClaimedJob(id: 1, attempt: 1, destination: "https://e.com:443", url: "https://e.com/",
                             headersJSON: #"{"X-Escaped":"a\"b\u00e9","X-Odd":[1]}"#)
        // An entry of another shape (the table's check refuses it) is skipped, not sent.
        #expect(job.headers == [StoredHeader(name: "X-Escaped", value: .literal("a\"bé"))])
    }
}
