import CourierCore
/// An ``HTTPTransport`` on libcurl's multi interface.
///
/// One dedicated thread drives a CURLM handle; callers await their outcomes. It keeps
/// connections alive and reuses them, speaks HTTP/2 over TLS where the server offers
/// it, always verifies TLS, follows no redirects, allows only http and https, caps
/// response bodies, and (unless private networks are allowed) refuses connections to
/// loopback, private and link-local addresses — judged on the address actually
/// connected to, so a DNS name cannot bring such an address in.
///
/// libcurl sometimes resends a request on a fresh connection when a reused one
/// closes without answering; this transport refuses that, so each `send` writes its
/// request at most once and reports `.connectionLost` instead. Proxies from the
/// environment (`http_proxy`, ...) are not used.
public final class CurlTransport: HTTPTransport, @unchecked Sendable {
    private let driver: CurlDriver

    /// Starts the driver thread.
    /// - Throws: ``CurlTransportError`` naming an invalid configuration field, or if
    ///   libcurl cannot be initialised.
    public init(configuration: Configuration = Configuration()) throws {
        try configuration.validate()
        driver = try CurlDriver(configuration: configuration)
        driver.start()
    }

    deinit {
        driver.stop()
    }

    /// Sends `request`. Never throws; see ``TransportOutcome``. Cancelling the calling
    /// task aborts the transfer at once and returns `.cancelled(maybeSent:)`, where
    /// `maybeSent` is `true` once a connection was ready and the request was about to
    /// be (or was) written.
    public func send(_ request: HTTPRequest) async -> TransportOutcome {
        if let refusal = RequestValidation.refusal(for: request) {
            return .blocked(refusal)
        }
        let driver = self.driver
        let id = driver.register()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                driver.submit(id: id, request: request, continuation: continuation)
            }
        } onCancel: {
            driver.cancel(id: id)
        }
    }

    /// Stops the driver thread and waits for it. Requests not yet connected return
    /// `.cancelled(maybeSent: false)`; requests already connected return
    /// `.cancelled(maybeSent: true)`, since they may have reached the server. Later
    /// calls to ``send(_:)`` return `.cancelled(maybeSent: false)` at once.
    public func shutdown() {
        driver.stop()
    }
}
