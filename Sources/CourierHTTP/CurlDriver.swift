import CourierCore
import CCurl
import Foundation

/// libcurl's global state is set up once per process, before any handle exists.
let curlGlobalSetup: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

/// Owns a CURLM multi handle and the one thread that drives it (a transport has one
/// or more of these, see `CurlTransport.Configuration.driverThreads`).
///
/// Callers register a request id, then submit the request with its continuation
/// through a locked queue and wake the thread with `curl_multi_wakeup`. Everything
/// else (easy handles, transfers, callbacks) lives on the driver thread.
final class CurlDriver: @unchecked Sendable {
    /// Where a registered request stands, as seen by callers (under the lock).
    private enum Phase { case registered, cancelledEarly, submitted }

    struct Submission {
        let id: UInt64
        let request: HTTPRequest
        let continuation: CheckedContinuation<TransportOutcome, Never>
    }

    private struct Shared {
        var nextID: UInt64 = 0
        var phases: [UInt64: Phase] = [:]
        var queued: [Submission] = []
        var cancels: [UInt64] = []
        var stopping = false
        /// A wake-up was sent and the driver has not yet taken the queues since. Later
        /// submissions and cancels ride on it: one `curl_multi_wakeup` (a write to libcurl's
        /// socket pair, and a turn of the driver's loop) per batch instead of one per request.
        var wakePending = false

        /// Whether the caller must wake the driver: true for the first request or cancel
        /// since the driver last took the queues.
        mutating func claimWakeUp() -> Bool {
            if wakePending { return false }
            wakePending = true
            return true
        }
    }

    private enum Admission { case wake, queued, refused }

    private let shared = Locked(Shared())
    private let multi: UnsafeMutableRawPointer
    private let configuration: CurlTransport.Configuration
    private let addressGuard: (@Sendable (String) -> String?)?
    private let finished = DispatchSemaphore(value: 0)
    private let driverThread = Locked<pthread_t?>(nil)

    // Driver-thread state.
    private var transfers: [UInt64: CurlTransfer] = [:]
    private var byHandle: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// Requests answered during this turn of the loop, resumed in `settle()` once their ids
    /// are released, so that a caller sending its next request sees this driver's count
    /// without them.
    private var answered: [(id: UInt64, continuation: CheckedContinuation<TransportOutcome, Never>, outcome: TransportOutcome)] = []

    /// - Parameter configuration: this driver's, with its share of the transport's connection
    ///   limits (see `DriverShares`).
    init(configuration: CurlTransport.Configuration) throws {
        guard curlGlobalSetup == CURLE_OK, let multi = curl_multi_init() else {
            throw CurlTransportError.curlInitFailed
        }
        self.multi = multi
        self.configuration = configuration
        self.addressGuard = configuration.allowPrivateNetworks ? nil : configuration.addressGuard
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxHostConnections)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections)
        _ = courier_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxCachedConnections)
        _ = courier_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
    }

    deinit {
        // Only here: callers may still call curl_multi_wakeup until the last reference goes.
        curl_multi_cleanup(multi)
    }

    func start() {
        let thread = Thread { [self] in
            driverThread.withLock { $0 = pthread_self() }
            run()
            finished.signal()
        }
        thread.name = "courier-curl"
        thread.start()
    }

    // MARK: - Caller side (any thread)

    /// The requests registered and not yet answered and released (released after each turn
    /// of the driver's loop): how busy this driver is, for the transport's choice of driver.
    var requestCount: Int { shared.withLock { $0.phases.count } }

    /// Reserves an id, so that a cancellation arriving before submission is kept.
    func register() -> UInt64 {
        shared.withLock { s in
            s.nextID += 1
            s.phases[s.nextID] = .registered
            return s.nextID
        }
    }

    func submit(id: UInt64, request: HTTPRequest, continuation: CheckedContinuation<TransportOutcome, Never>) {
        let accepted = shared.withLock { s -> Admission in
            if s.stopping || s.phases[id] != .registered {
                s.phases[id] = nil
                return .refused
            }
            s.phases[id] = .submitted
            s.queued.append(Submission(id: id, request: request, continuation: continuation))
            return s.claimWakeUp() ? .wake : .queued
        }
        switch accepted {
        case .wake: curl_multi_wakeup(multi)
        case .queued: break
        case .refused: continuation.resume(returning: .cancelled(maybeSent: false))
        }
    }

    func cancel(id: UInt64) {
        let wake = shared.withLock { s -> Bool in
            switch s.phases[id] {
            case .registered:
                s.phases[id] = .cancelledEarly
                return false
            case .submitted:
                s.cancels.append(id)
                return s.claimWakeUp()
            case .cancelledEarly, nil:
                return false
            }
        }
        if wake { curl_multi_wakeup(multi) }
    }

    /// Stops the thread and waits for it; every pending request is answered with
    /// `.cancelled`. Safe to call more than once and from several threads.
    func stop() {
        shared.withLock { $0.stopping = true }
        curl_multi_wakeup(multi)
        let onDriver = driverThread.withLock { t in t.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if onDriver { return }
        finished.wait()
        finished.signal()   // let any other caller of stop() through as well
    }

    // MARK: - Driver thread

    private func run() {
        var running: Int32 = 0
        while true {
            let (incoming, cancels, stopping) = shared.withLock { s in
                defer {
                    s.queued.removeAll(keepingCapacity: true)
                    s.cancels.removeAll(keepingCapacity: true)
                    s.wakePending = false
                }
                return (s.queued, s.cancels, s.stopping)
            }
            if stopping {
                for submission in incoming {
                    submission.continuation.resume(returning: .cancelled(maybeSent: false))
                }
                break
            }
            let cancelled = Set(cancels)
            for submission in incoming {
                if cancelled.contains(submission.id) {
                    answer(submission.id, submission.continuation, .cancelled(maybeSent: false))
                } else {
                    begin(submission)
                }
            }
            for id in cancels {
                if let transfer = transfers[id] {
                    finish(transfer, with: .cancelled(maybeSent: transfer.requestStarted))
                }
            }
            curl_multi_perform(multi, &running)
            collectFinished()
            settle()
            curl_multi_poll(multi, nil, 0, configuration.idleWaitMilliseconds, nil)
        }
        for transfer in Array(transfers.values) {
            finish(transfer, with: .cancelled(maybeSent: transfer.requestStarted))
        }
        settle()
        let late = shared.withLock { s in
            defer { s.queued.removeAll(); s.phases.removeAll() }
            return s.queued
        }
        for submission in late {
            submission.continuation.resume(returning: .cancelled(maybeSent: false))
        }
        for handle in idleHandles { curl_easy_cleanup(handle) }
        idleHandles.removeAll()
    }

    private func begin(_ submission: Submission) {
        guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
            answer(submission.id, submission.continuation, .notSent("libcurl could not create an easy handle"))
            return
        }
        let transfer = CurlTransfer(
            id: submission.id,
            continuation: submission.continuation,
            easy: easy,
            addressGuard: addressGuard,
            maxBodyBytes: configuration.maxResponseBodyBytes,
            mayStillSend: submission.request.mayStillSend
        )
        if let failure = CurlEasySetup.configure(transfer, request: submission.request, userAgent: configuration.userAgent) {
            release(transfer)
            answer(submission.id, submission.continuation, failure)
            return
        }
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else {
            release(transfer)
            answer(submission.id, submission.continuation, .notSent("libcurl refused the transfer"))
            return
        }
        transfers[transfer.id] = transfer
        byHandle[easy] = transfer
    }

    private func collectFinished() {
        var pending: Int32 = 0
        while let message = curl_multi_info_read(multi, &pending) {
            guard message.pointee.msg == CURLMSG_DONE,
                  let easy = message.pointee.easy_handle,
                  let transfer = byHandle[easy] else { continue }
            let code = message.pointee.data.result
            var requestBytes = 0, headerBytes = 0
            _ = courier_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestBytes)
            _ = courier_easy_getinfo_long(easy, CURLINFO_HEADER_SIZE, &headerBytes)
            let evidence = CurlOutcomeClassifier.Evidence(
                requestStarted: transfer.requestStarted,
                refusal: transfer.refusal,
                bodyTruncated: transfer.bodyTruncated,
                resendRefused: transfer.resendRefused,
                withheld: transfer.withheld,
                requestBytesSent: requestBytes,
                responseHeaderBytes: headerBytes
            )
            let outcome = CurlOutcomeClassifier.outcome(code: code, evidence: evidence) {
                var status = 0
                _ = courier_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                return HTTPResponseSummary(
                    status: status,
                    headers: transfer.headers,
                    bodyPrefix: transfer.body,
                    bodyTruncated: transfer.bodyTruncated
                )
            }
            finish(transfer, with: outcome)
        }
    }

    /// Detaches a transfer from the multi handle, recycles its easy handle and answers the caller.
    private func finish(_ transfer: CurlTransfer, with outcome: TransportOutcome) {
        curl_multi_remove_handle(multi, transfer.easy)
        transfers[transfer.id] = nil
        byHandle[transfer.easy] = nil
        release(transfer)
        answer(transfer.id, transfer.continuation, outcome)
    }

    private func release(_ transfer: CurlTransfer) {
        if let list = transfer.headerList {
            curl_slist_free_all(list)
            transfer.headerList = nil
        }
        curl_easy_reset(transfer.easy)
        if idleHandles.count < configuration.maxCachedConnections {
            idleHandles.append(transfer.easy)
        } else {
            curl_easy_cleanup(transfer.easy)
        }
    }

    private func answer(_ id: UInt64, _ continuation: CheckedContinuation<TransportOutcome, Never>, _ outcome: TransportOutcome) {
        answered.append((id, continuation, outcome))
    }

    /// Releases the ids of this turn's answered requests (one lock for all), then resumes their callers.
    private func settle() {
        guard !answered.isEmpty else { return }
        shared.withLock { s in
            for answer in answered { s.phases[answer.id] = nil }
        }
        for answer in answered { answer.continuation.resume(returning: answer.outcome) }
        answered.removeAll(keepingCapacity: true)
    }
}
