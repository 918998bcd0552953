import CourierCore
import CCurl
import Glibc

/// Configures an easy handle for one transfer: options, headers, body, callbacks.
enum CurlEasySetup {
    /// Returns an outcome if the handle could not be configured, else `nil`.
    static func configure(_ transfer: CurlTransfer, request: HTTPRequest, userAgent: String) -> TransportOutcome? {
        let h = transfer.easy
        var failed: CURLoption?
        func set(_ option: CURLoption, _ value: Int) {
            if failed == nil, courier_easy_setopt_long(h, option, value) != CURLE_OK { failed = option }
        }
        func set(_ option: CURLoption, _ value: String) {
            if failed == nil, courier_easy_setopt_string(h, option, value) != CURLE_OK { failed = option }
        }
        func check(_ code: CURLcode, _ option: CURLoption) {
            if failed == nil, code != CURLE_OK { failed = option }
        }

        set(CURLOPT_URL, request.url)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        set(CURLOPT_FOLLOWLOCATION, 0)
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        set(CURLOPT_PROXY, "")                 // never use *_proxy from the environment
        set(CURLOPT_USERAGENT, userAgent)
        // Ask for answers uncompressed (`identity`), and let libcurl decode whatever encoding it
        // supports (gzip, deflate, br, zstd as built) should a server compress anyway: the
        // content checks and excerpts see the decoded body. A job's own Accept-Encoding header
        // replaces the offer. Offering every encoding ("") cost 3-4% of the worker's CPU per
        // HTTP job for answers of which the worker reads at most a prefix (bench/notes.md, session 18).
        set(CURLOPT_ACCEPT_ENCODING, "identity")
        set(CURLOPT_TIMEOUT_MS, RequestValidation.milliseconds(request.timeout))
        if let connect = request.connectTimeout {
            set(CURLOPT_CONNECTTIMEOUT_MS, RequestValidation.milliseconds(connect))
        }
        set(CURLOPT_TCP_KEEPALIVE, 1)

        // Method and body.
        let method = request.method
        if method == "HEAD" {
            set(CURLOPT_NOBODY, 1)
        } else if let body = request.body {
            check(courier_easy_setopt_offt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), CURLOPT_POSTFIELDSIZE_LARGE)
            if body.isEmpty {
                set(CURLOPT_COPYPOSTFIELDS, "")
            } else {
                let code = body.withUnsafeBytes { raw in
                    courier_easy_setopt_pointer(h, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                }
                check(code, CURLOPT_COPYPOSTFIELDS)
            }
            if method != "POST" { set(CURLOPT_CUSTOMREQUEST, method) }
        } else if method == "POST" || method == "PUT" || method == "PATCH" {
            check(courier_easy_setopt_offt(h, CURLOPT_POSTFIELDSIZE_LARGE, 0), CURLOPT_POSTFIELDSIZE_LARGE)
            set(CURLOPT_COPYPOSTFIELDS, "")     // Content-Length: 0
            if method != "POST" { set(CURLOPT_CUSTOMREQUEST, method) }
        } else {
            set(CURLOPT_HTTPGET, 1)
            if method != "GET" { set(CURLOPT_CUSTOMREQUEST, method) }
        }

        // Headers. libcurl drops a header written "Name:" and sends "Name;" as empty.
        var list: UnsafeMutablePointer<curl_slist>?
        var sawExpect = false
        for header in request.headers {
            let lower = header.name.lowercased()
            if lower == "content-length" || lower == "transfer-encoding" { continue }
            if lower == "expect" { sawExpect = true }
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            list = curl_slist_append(list, line)
        }
        if !sawExpect { list = curl_slist_append(list, "Expect:") }
        transfer.headerList = list
        check(courier_easy_setopt_slist(h, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)

        // Callbacks; each gets the transfer as its user pointer.
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        check(courier_easy_setopt_write_cb(h, curlWriteCallback), CURLOPT_WRITEFUNCTION)
        check(courier_easy_setopt_pointer(h, CURLOPT_WRITEDATA, me), CURLOPT_WRITEDATA)
        check(courier_easy_setopt_header_cb(h, curlHeaderCallback), CURLOPT_HEADERFUNCTION)
        check(courier_easy_setopt_pointer(h, CURLOPT_HEADERDATA, me), CURLOPT_HEADERDATA)
        check(courier_easy_setopt_prereq_cb(h, curlPreRequestCallback), CURLOPT_PREREQFUNCTION)
        check(courier_easy_setopt_pointer(h, CURLOPT_PREREQDATA, me), CURLOPT_PREREQDATA)
        if transfer.addressGuard != nil {
            check(courier_easy_setopt_opensocket_cb(h, curlOpenSocketCallback), CURLOPT_OPENSOCKETFUNCTION)
            check(courier_easy_setopt_pointer(h, CURLOPT_OPENSOCKETDATA, me), CURLOPT_OPENSOCKETDATA)
        }

        if let failed {
            return .notSent("libcurl rejected transfer option \(failed.rawValue)")
        }
        return nil
    }
}

// MARK: - C callbacks (run on the driver thread inside curl_multi_perform)

private func transfer(_ user: UnsafeMutableRawPointer?) -> CurlTransfer {
    Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
}

private let curlWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, user in
    let length = size * count
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length)
    return transfer(user).receiveBody(bytes) ? length : 0
}

private let curlHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, user in
    let length = size * count
    transfer(user).receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length))
    return length
}

/// Runs when a connection (new or reused) is ready and the request is about to be
/// written. Re-checks the connected address, refuses libcurl's silent resend of the
/// request on a fresh connection (one call of `send` writes the request at most once),
/// and asks the request's `mayStillSend` last: a request that waited for a connection to
/// its host may no longer be wanted.
private let curlPreRequestCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32) -> Int32 = {
    user, primaryIP, _, _, _ in
    let t = transfer(user)
    t.preRequestCalls += 1
    if t.preRequestCalls > 1 {
        t.resendRefused = true
        return Int32(CURL_PREREQFUNC_ABORT)
    }
    if t.addressGuard != nil {
        let ip = primaryIP.map { String(cString: $0) } ?? ""
        if t.judge(ip: ip) != nil { return Int32(CURL_PREREQFUNC_ABORT) }
    }
    if let mayStillSend = t.mayStillSend, !mayStillSend() {
        t.withheld = true
        return Int32(CURL_PREREQFUNC_ABORT)
    }
    t.requestStarted = true
    return Int32(CURL_PREREQFUNC_OK)
}

/// Runs before libcurl connects a new socket: refuses guarded addresses, so no
/// packet ever reaches them, whatever name resolved to them.
private let curlOpenSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = {
    user, purpose, address in
    guard let address else { return CURL_SOCKET_BAD }
    let t = transfer(user)
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    guard courier_sockaddr_ntop(address, &buffer, socklen_t(buffer.count)) == 0 else {
        if t.refusal == nil { t.refusal = "destination address family is not supported" }
        return CURL_SOCKET_BAD
    }
    let ip = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if t.judge(ip: ip) != nil { return CURL_SOCKET_BAD }
    let a = address.pointee
    return socket(a.family, a.socktype | Int32(SOCK_CLOEXEC.rawValue), a.protocol)
}
