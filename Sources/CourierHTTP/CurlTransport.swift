import CourierCore
/// An ``HTTPTransport`` on libcurl's multi interface.
///
/// Dedicated threads (``Configuration/driverThreads``) each drive a CURLM handle, and
/// each request goes to the one with the fewest; callers await their outcomes. It keeps
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
    private let drivers: [CurlDriver]

    /// Starts the driver threads.
    /// - Throws: ``CurlTransportError`` naming an invalid configuration field, or if
    ///   libcurl cannot be initialised.
    public init(configuration: Configuration = Configuration()) throws {
        try configuration.validate()
        drivers = try DriverShares(configuration).configurations.map { try CurlDriver(configuration: $0) }
        for driver in drivers { driver.start() }
    }

    deinit {
        for driver in drivers { driver.stop() }
    }

    /// How many driver threads run: ``Configuration/driverThreads``, or fewer where a
    /// connection limit is smaller (see `DriverShares`).
    var driverCount: Int { drivers.count }

    /// Sends `request`. Never throws; see ``TransportOutcome``. Cancelling the calling
    /// task aborts the transfer at once and returns `.cancelled(maybeSent:)`, where
    /// `maybeSent` is `true` once a connection was ready and the request was about to
    /// be (or was) written.
    public func send(_ request: HTTPRequest) async -> TransportOutcome {
        if let refusal = RequestValidation.refusal(for: request) {
            return .blocked(refusal)
        }
        let driver = nextDriver()
        let id = driver.register()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                driver.submit(id: id, request: request, continuation: continuation)
            }
        } onCancel: {
            driver.cancel(id: id)
        }
    }

    /// The driver with the fewest requests, the first of those on a tie: a busy worker's
    /// load spreads over every thread, while requests that come one at a time all go to
    /// the first and reuse its connection.
    private func nextDriver() -> CurlDriver {
        var chosen = drivers[0]
        guard drivers.count > 1 else { return chosen }
        var fewest = chosen.requestCount
        for driver in drivers.dropFirst() where fewest > 0 {
            let count = driver.requestCount
            if count < fewest { (chosen, fewest) = (driver, count) }
        }
        return chosen
    }

    /// Stops the driver threads and waits for them. Requests not yet connected return
    /// `.cancelled(maybeSent: false)`; requests already connected return
    /// `.cancelled(maybeSent: true)`, since they may have reached the server. Later
    /// calls to ``send(_:)`` return `.cancelled(maybeSent: false)` at once.
    public func shutdown() {
        for driver in drivers { driver.stop() }
    }
}
