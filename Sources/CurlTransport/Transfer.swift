internal import CCurl
import Glibc

/// What runs when a transfer ends: exactly once, on the loop thread that ran it (or on the
/// caller's thread when it never reached a loop).
public typealias TransferCompletion = @Sendable (Result<TransferResponse, TransferFailure>) -> Void

/// One transfer: its easy handle and everything libcurl points into while it runs.
///
/// Thread-confined to the loop thread of ``MultiLoop`` (never `Sendable`). It owns the easy handle,
/// the error buffer, every `curl_slist` handed to curl (curl does not copy those), the received
/// body and headers, and the completion until it runs. Callbacks find it through an
/// unretained pointer in `CURLOPT_WRITEDATA`/`HEADERDATA`/`OPENSOCKETDATA`/`PRIVATE`; the loop's
/// table of transfers is the strong owner until after `curl_easy_cleanup`.
final class Transfer {
    /// The client-wide identifier of the `perform` call.
    let id: UInt64
    /// The request being performed.
    let request: TransferRequest
    /// The completion to run exactly once; `nil` once taken.
    var completion: TransferCompletion?

    private var easy: UnsafeMutableRawPointer?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var resolveList: UnsafeMutablePointer<curl_slist>?
    private var connectToList: UnsafeMutablePointer<curl_slist>?

    /// Decoded body bytes received so far.
    private(set) var body: [UInt8] = []
    /// Set when the write callback refused bytes of a 200 answer past ``TransferRequest/maxBodyBytes``.
    private(set) var bodyLimitExceeded = false
    /// The `Content-Length` of a 200 answer that announced more than ``TransferRequest/maxBodyBytes``
    /// (and the allowance for compression): the transfer ended before its body.
    private(set) var announcedLength: Int?
    /// Set when the body of an answer other than 200 grew past ``TransferRequest/maxBodyBytes``:
    /// the transfer ended there, and the status and headers are the response.
    private(set) var bodyCut = false
    /// The status of the last status line received (0 before the first).
    private(set) var lastStatus = 0
    /// Set by the first status line: a blank line before it ends no header block.
    private(set) var statusLineSeen = false
    /// The two values of a response that names two different `Content-Length`s (RFC 9112 §6.3:
    /// not a valid answer; libcurl would use the last one, and then wait for bytes never sent).
    private(set) var conflictingLengths: (first: String, second: String)?
    /// Set by the blank line that ends the header block of the last status line. Lines after it
    /// are the trailers of a chunked body: counted, but not headers of the response.
    private(set) var headersEnded = false
    /// Headers of the last response seen so far.
    private(set) var headers: [(name: String, value: String)] = []
    /// Bytes of every header and trailer line received so far (interim responses included).
    private(set) var headerBytes = 0
    /// Set when the header callback refused a line past ``TransferRequest/maxHeaderBytes``.
    private(set) var headerLimitExceeded = false
    /// The `errno` of a `socket()` call that failed for want of file descriptors (`EMFILE`, `ENFILE`).
    private(set) var descriptorShortage: Int32?
    /// Addresses the open-socket callback refused as private or reserved.
    private(set) var refusedAddresses: [String] = []
    /// Sockets the open-socket callback opened (addresses that were allowed).
    private(set) var openedSockets = 0
    /// Whether a lookup that times out is left to finish on its own thread (``AbandonedLookups``).
    private var quickExit = false
    /// The socket of the connection being made (the last one the open-socket callback opened)
    /// while the transfer is not connected yet; -1 when none. See ``MultiLoop``'s nudge.
    private(set) var connectingSocket: Int32 = -1
    /// When that socket was opened (the shim's monotonic clock, nanoseconds).
    private(set) var connectingSince: UInt64 = 0
    /// Called (on the loop thread, inside libcurl) when the open-socket callback refuses an
    /// address: the loop then has libcurl go on to the next one at once (``runSoon()``).
    var onRefusedAddress: (() -> Void)?

    /// Creates the transfer and its easy handle (not configured yet).
    /// - Returns: `nil` when libcurl cannot allocate an easy handle.
    init?(id: UInt64, request: TransferRequest, completion: @escaping TransferCompletion) {
        guard let handle = curl_easy_init() else { return nil }
        self.id = id
        self.request = request
        self.completion = completion
        self.easy = handle
        let size = Int(ccurl_error_size) + 1
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        errorBuffer.initialize(repeating: 0, count: size)
    }

    deinit {
        cleanup()
        errorBuffer.deallocate()
    }

    /// The easy handle (valid until ``cleanup()``).
    var handle: UnsafeMutableRawPointer? { easy }

    /// Frees the easy handle and the lists curl pointed to. Idempotent. Call it only after the
    /// handle was removed from its multi handle.
    func cleanup() {
        if let easy {
            curl_easy_cleanup(easy)
            self.easy = nil
        }
        curl_slist_free_all(headerList)
        curl_slist_free_all(resolveList)
        curl_slist_free_all(connectToList)
        headerList = nil
        resolveList = nil
        connectToList = nil
    }

    /// Recovers the transfer from a callback's user data.
    static func from(_ userData: UnsafeMutableRawPointer?) -> Transfer? {
        guard let userData else { return nil }
        return Unmanaged<Transfer>.fromOpaque(userData).takeUnretainedValue()
    }

    // MARK: - Configuration

    /// Sets every option of the request on the easy handle.
    /// - Parameter share: The share handle (DNS and TLS session caches) to attach, if any.
    /// - Throws: ``TransferFailure`` of kind ``TransferFailureKind/invalidRequest`` when curl
    ///   rejects an option.
    func configure(share: UnsafeMutableRawPointer?) throws(TransferFailure) {
        guard let easy else {
            throw TransferFailure(kind: .invalidRequest, message: "the transfer was already cleaned up")
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        // A CR or LF would end the header line and start another request header (a second Host).
        for value in [request.userAgent] + request.headers where value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            throw TransferFailure(kind: .invalidRequest, message: "a request header contains CR, LF or NUL: \(value.debugDescription)")
        }

        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)), "ERRORBUFFER")
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me), "PRIVATE")
        try setLong(CURLOPT_NOSIGNAL, 1, "NOSIGNAL")
        // A name lookup that timed out leaves its resolver thread to finish on its own: without
        // this, libcurl 7.88 joins it when the transfer ends, and the loop thread (every transfer
        // on it) waited for the system resolver's own timeouts, about 30 s, past `--max-time`.
        // Bounded: see AbandonedLookups.
        quickExit = AbandonedLookups.mayAbandon(now: UInt64(ccurl_monotonic_ns()))
        try setLong(CURLOPT_QUICK_EXIT, quickExit ? 1 : 0, "QUICK_EXIT")
        try setString(CURLOPT_URL, request.url, "URL")
        try setString(CURLOPT_PROTOCOLS_STR, request.allowPlainHTTP ? "http,https" : "https", "PROTOCOLS_STR")
        try setString(CURLOPT_REDIR_PROTOCOLS_STR, "https", "REDIR_PROTOCOLS_STR")
        try setLong(CURLOPT_FOLLOWLOCATION, 0, "FOLLOWLOCATION")
        // No proxy, whatever `https_proxy`/`all_proxy` say: the device connects to the host
        // itself, and the address policy can only check the address connected to (through a
        // proxy it would check the proxy's, and the proxy's `200 Connection established` would
        // stand for the server's answer).
        try setString(CURLOPT_PROXY, "", "PROXY")
        if let body = request.body {
            if body.contentType.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                throw TransferFailure(kind: .invalidRequest, message: "the content type contains CR, LF or NUL: \(body.contentType.debugDescription)")
            }
            // The size first: COPYPOSTFIELDS copies that many bytes (a body may hold NUL bytes).
            try check(ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, body.bytes.count), "POSTFIELDSIZE_LARGE")
            let code = body.bytes.withUnsafeBytes { buffer in
                // An empty body still needs a valid pointer (curl copies zero bytes from it).
                ccurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafeRawPointer(errorBuffer)))
            }
            try check(code, "COPYPOSTFIELDS")
        } else {
            try setLong(CURLOPT_HTTPGET, 1, "HTTPGET")
        }
        try setLong(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout), "CONNECTTIMEOUT_MS")
        try setLong(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.maxTime), "TIMEOUT_MS")
        // Empty string: offer every encoding curl can decode; the write callback sees decoded bytes.
        try setString(CURLOPT_ACCEPT_ENCODING, "", "ACCEPT_ENCODING")
        // The body limit is enforced by the header callback (a 200 answer's Content-Length) and the
        // write callback (decoded bytes), not by CURLOPT_MAXFILESIZE_LARGE: libcurl applies that to
        // every status, so a large 404 page would hide the 404.
        try setString(CURLOPT_USERAGENT, request.userAgent, "USERAGENT")

        // A POST names its body's type, and waits for no `100 Continue` (curl would send
        // `Expect: 100-continue` for a large body and pause up to a second).
        headerList = Self.makeList(request.headers + (request.body.map { ["Content-Type: \($0.contentType)", "Expect:"] } ?? []))
        if let headerList {
            try check(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), "HTTPHEADER")
        }
        resolveList = Self.makeList(request.resolve)
        if let resolveList {
            try check(ccurl_easy_setopt_slist(easy, CURLOPT_RESOLVE, resolveList), "RESOLVE")
        }
        connectToList = Self.makeList(request.connectTo)
        if let connectToList {
            try check(ccurl_easy_setopt_slist(easy, CURLOPT_CONNECT_TO, connectToList), "CONNECT_TO")
        }

        switch request.httpVersion {
        case .http1_1:
            try setLong(CURLOPT_HTTP_VERSION, ccurl_http_version_1_1, "HTTP_VERSION")
        case .http2:
            try setLong(CURLOPT_HTTP_VERSION, ccurl_http_version_2tls, "HTTP_VERSION")
            // Wait for a connection that can multiplex rather than opening another one.
            try setLong(CURLOPT_PIPEWAIT, 1, "PIPEWAIT")
        }

        if let caFile = request.caFile {
            try setString(CURLOPT_CAINFO, caFile, "CAINFO")
            // "Instead of" the system store: drop the compiled-in CA directory too.
            try check(ccurl_easy_setopt_string(easy, CURLOPT_CAPATH, nil), "CAPATH")
        } else if Self.systemBundleReadable {
            // The system store is the compiled-in bundle file (Debian's update-ca-certificates
            // writes every CA of /etc/ssl/certs into it). Without the CA directory next to it,
            // libcurl (7.87+) builds the X509 store once per multi handle and keeps it
            // (CURLOPT_CA_CACHE_TIMEOUT); with the directory it parses the whole bundle for every
            // connection, about 35 ms of CPU here.
            try check(ccurl_easy_setopt_string(easy, CURLOPT_CAPATH, nil), "CAPATH")
        }
        // Memory per connection: OpenSSL frees idle TLS buffers, and curl's receive buffer is 8 KiB
        // (the default is 16 KiB; association files are small and streamed into our own buffer).
        // Over HTTP/2, libcurl 7.88 copies a stream's header block into that buffer and stalls
        // when it does not fit (a 9 KB Apple-Failure-Details timed out, or read as HTTP/0.9):
        // there, room for a header line of libcurl's own limit (100 KiB). Only the bytes received
        // touch its pages.
        try check(ccurl_easy_release_tls_buffers(easy), "SSL_CTX_FUNCTION")
        try setLong(CURLOPT_BUFFERSIZE, request.httpVersion == .http2 ? Self.multiplexedReceiveBuffer : 8 * 1024, "BUFFERSIZE")
        // An idle connection is worth keeping for the request that follows at once (the legacy
        // path after a 404, on the same loop): after 2 s libcurl closes it when it next looks.
        // An HTTP/2 connection (the CDN's) carries every request of the run, retries seconds
        // later included: it is kept as long as libcurl keeps one by default.
        try setLong(CURLOPT_MAXAGE_CONN, request.httpVersion == .http2 ? Self.multiplexedConnectionLifetime : Self.idleConnectionLifetime,
                    "MAXAGE_CONN")
        if closesUnlessKept {
            // Closed when done unless the final status line says otherwise (`keepConnection(after:)`).
            try setLong(CURLOPT_FORBID_REUSE, 1, "FORBID_REUSE")
        }
        try setLong(CURLOPT_SSL_VERIFYPEER, request.verifyPeer ? 1 : 0, "SSL_VERIFYPEER")
        try setLong(CURLOPT_SSL_VERIFYHOST, request.verifyPeer ? 2 : 0, "SSL_VERIFYHOST")
        if request.collectCertificates {
            try setLong(CURLOPT_CERTINFO, 1, "CERTINFO")
            // The chain comes with a handshake: a reused connection has none to report (and its
            // timings would leave the handshake out).
            try setLong(CURLOPT_FRESH_CONNECT, 1, "FRESH_CONNECT")
        }

        if let share {
            try check(ccurl_easy_setopt_share(easy, share), "SHARE")
        }

        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me), "WRITEDATA")
        try check(
            ccurl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, userData in
                guard let transfer = Transfer.from(userData) else { return 0 }
                return transfer.receive(body: UnsafeRawPointer(data), count: size * count)
            },
            "WRITEFUNCTION"
        )
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me), "HEADERDATA")
        try check(
            ccurl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, userData in
                guard let transfer = Transfer.from(userData) else { return 0 }
                let length = size * count
                // Anything but `length` aborts the transfer (CURLE_WRITE_ERROR).
                return transfer.receive(headerLine: UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : length)) ? length : 0
            },
            "HEADERFUNCTION"
        )
        // Every socket is opened here: private addresses are refused (unless allowed), and a
        // socket() that fails for want of descriptors is told apart from a host that refuses.
        try check(ccurl_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me), "OPENSOCKETDATA")
        try check(
            ccurl_easy_setopt_opensocket_callback(easy) { userData, _, address in
                guard let transfer = Transfer.from(userData), let address else { return ccurl_socket_bad }
                return transfer.openSocket(address)
            },
            "OPENSOCKETFUNCTION"
        )
    }

    /// Seconds an idle connection is kept for reuse (`CURLOPT_MAXAGE_CONN`).
    static let idleConnectionLifetime = 2
    /// Seconds an idle HTTP/2 connection is kept for reuse: libcurl's own default.
    static let multiplexedConnectionLifetime = 118

    /// Whether libcurl's compiled-in CA bundle exists and is readable (then the CA directory is
    /// not needed to trust the system's CAs).
    static let systemBundleReadable: Bool = {
        guard let path = ccurl_default_cainfo() else { return false }
        return access(path, R_OK) == 0
    }()

    private func check(_ code: CURLcode, _ option: String) throws(TransferFailure) {
        guard code != CURLE_OK else { return }
        throw TransferFailure(
            kind: .invalidRequest,
            curlCode: Int(code.rawValue),
            message: "libcurl rejected CURLOPT_\(option): \(Self.describe(code))"
        )
    }

    private func setLong(_ option: CURLoption, _ value: Int, _ name: String) throws(TransferFailure) {
        guard let easy else { return }
        try check(ccurl_easy_setopt_long(easy, option, value), name)
    }

    private func setString(_ option: CURLoption, _ value: String, _ name: String) throws(TransferFailure) {
        guard let easy else { return }
        // libcurl copies string options, so the pointer need not outlive the call.
        let code = value.withCString { ccurl_easy_setopt_string(easy, option, $0) }
        try check(code, name)
    }

    private static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(1, Int(min(seconds * 1000, Double(Int32.max))))
    }

    private static func makeList(_ items: [String]) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        for item in items {
            guard let appended = curl_slist_append(list, item) else { continue }
            list = appended
        }
        return list
    }

    static func describe(_ code: CURLcode) -> String {
        guard let text = curl_easy_strerror(code) else { return "curl error \(code.rawValue)" }
        return String(cString: text)
    }

    // MARK: - Callbacks (loop thread, inside curl_multi_socket_action)

    private func receive(body data: UnsafeRawPointer?, count: Int) -> Int {
        guard count > 0 else { return 0 }
        guard let data else { return 0 }
        let room = max(0, request.maxBodyBytes - body.count)
        if count > room {
            // Only a 200 answer's body is judged: a longer one fails the transfer. Any other
            // answer is decided by its status and headers, so its body is kept up to the limit
            // and the transfer ends there with that response (`outcome(_:)`).
            if lastStatus == 200, request.failsOnLargeBody {
                bodyLimitExceeded = true
            } else {
                bodyCut = true
                body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: room))
            }
            return 0  // aborts the transfer with CURLE_WRITE_ERROR
        }
        body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    /// Bytes a 200 answer's `Content-Length` may announce above ``TransferRequest/maxBodyBytes``:
    /// it counts encoded bytes, and compression can make an incompressible body a little longer.
    /// The write callback enforces the exact limit on decoded bytes.
    static let encodingAllowance = 1024

    /// The receive buffer of an HTTP/2 transfer: a header block up to this size decodes.
    static let multiplexedReceiveBuffer = 128 * 1024

    /// Keeps one header or trailer line; returns `false` (abort) once the lines of this transfer
    /// exceed ``TransferRequest/maxHeaderBytes``: libcurl caps a response's headers but not the
    /// trailers of a chunked body, which a server may send without end.
    private func receive(headerLine bytes: UnsafeRawBufferPointer) -> Bool {
        headerBytes += bytes.count
        if headerBytes > request.maxHeaderBytes {
            headerLimitExceeded = true
            return false
        }
        var line = String(decoding: bytes, as: UTF8.self)
        while let last = line.last, last.isNewline {
            line.removeLast()
        }
        // A status line starts the first response, or the one after an interim 1xx; after the
        // final response's headers, a line so shaped is a trailer.
        if line.hasPrefix("HTTP/"), !statusLineSeen || (headersEnded && (100..<200).contains(lastStatus)) {
            headers.removeAll()  // a new response begins (1xx, or the final one)
            headersEnded = false
            statusLineSeen = true
            lastStatus = Self.status(ofStatusLine: line)
            if closesUnlessKept { keepConnection(status: lastStatus) }
            return true
        }
        if line.isEmpty {
            guard statusLineSeen, !headersEnded else { return true }
            headersEnded = true
            // A 200 answer that announces a body over the limit ends here, before its body.
            if lastStatus == 200, request.failsOnLargeBody, let length = header("Content-Length").flatMap({ Int($0) }),
               length > request.maxBodyBytes + Self.encodingAllowance {
                announcedLength = length
                return false
            }
            return true
        }
        // A trailer line of a chunked body: it must not stand in for a header the answer lacks
        // (RFC 9110 §6.5.1).
        guard !headersEnded else { return true }
        if let first = line.first, first == " " || first == "\t", var previous = headers.popLast() {
            previous.value += " " + line.trimmingWhitespace()
            headers.append(previous)
            return true
        }
        guard let colon = line.firstIndex(of: ":") else { return true }
        let name = String(line[..<colon])
        let value = String(line[line.index(after: colon)...]).trimmingWhitespace()
        if name.equalsIgnoringASCIICase("Content-Length"), let first = header("Content-Length"), first != value {
            conflictingLengths = (first, value)
            return false
        }
        headers.append((name: name, value: value))
        return true
    }

    /// Whether the connection is closed when the transfer ends unless its status is one of
    /// ``TransferRequest/keepConnectionAfter`` (HTTP/1.1 only: streams share an HTTP/2 connection).
    private var closesUnlessKept: Bool {
        request.keepConnectionAfter != nil && request.httpVersion == .http1_1
    }

    /// Sets `CURLOPT_FORBID_REUSE` from the status of a status line: libcurl reads that flag only
    /// when the transfer is done, to close the connection or keep it, so the last status line of
    /// the transfer (interim 1xx ones come first) decides.
    private func keepConnection(status: Int) {
        guard let easy, let kept = request.keepConnectionAfter else { return }
        _ = ccurl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, kept.contains(status) ? 0 : 1)
    }

    /// The status of a status line ("HTTP/1.1 404 Not Found" → 404), 0 when it has none: the
    /// digits after the version and its blanks, at most three, as libcurl reads them (`%3d`, so
    /// "HTTP/1.1 200\tOK" and "HTTP/1.1 404x" are answers it accepts).
    static func status(ofStatusLine line: String) -> Int {
        var bytes = line.utf8.drop { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        bytes = bytes.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        var status = 0
        for byte in bytes.prefix(3) {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { break }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return status
    }

    /// The value of the first header of the current response with this name.
    private func header(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    private func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var buffer = [CChar](repeating: 0, count: 64)
        let formatted = buffer.withUnsafeMutableBufferPointer { pointer -> String? in
            guard let base = pointer.baseAddress, ccurl_sockaddr_ntop(address, base, pointer.count) == 0 else {
                return nil
            }
            return String(cString: base)
        }
        let text = formatted ?? "(unknown address family \(ccurl_sockaddr_family(address)))"
        if !request.allowPrivateAddresses, formatted == nil || AddressPolicy.isPrivateOrReserved(text) {
            refusedAddresses.append(text)
            onRefusedAddress?()
            return ccurl_socket_bad
        }
        let fd = socket(ccurl_sockaddr_family(address), ccurl_sockaddr_socktype(address), ccurl_sockaddr_protocol(address))
        if fd >= 0 {
            openedSockets += 1
            connectingSocket = fd
            connectingSince = UInt64(ccurl_monotonic_ns())
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        } else if errno == EMFILE || errno == ENFILE {
            descriptorShortage = errno
        }
        return fd
    }

    /// Whether the transfer still waits for its TCP connection; once libcurl has timed a connect,
    /// the socket is forgotten and this is `false` for good.
    func stillConnecting() -> Bool {
        guard connectingSocket >= 0 else { return false }
        if secondsInfo(CURLINFO_CONNECT_TIME_T) > 0 {
            connectingSocket = -1
            return false
        }
        return true
    }

    /// Asks libcurl to run this transfer again at once: pausing and resuming it sets its timer to
    /// now (``MultiLoop``'s nudge; a connecting transfer has nothing paused to lose).
    func runSoon() {
        guard let easy else { return }
        _ = curl_easy_pause(easy, 5)  // CURLPAUSE_ALL
        _ = curl_easy_pause(easy, 0)  // CURLPAUSE_CONT
    }

    // MARK: - Results (loop thread, after CURLMSG_DONE and before cleanup)

    /// The transfer's result once libcurl ended it with `code`.
    ///
    /// - A transfer libcurl calls done is a failure when its header block never ended: libcurl
    ///   7.88 accepts a connection closed after the status line or inside the headers as a whole
    ///   answer with an empty body.
    /// - An answer other than 200 (any answer, without ``TransferRequest/failsOnLargeBody``)
    ///   whose body was cut at the limit, or could not be decoded, is a response
    ///   (``TransferResponse/bodyTruncated``): its status and headers decide it.
    func outcome(_ code: CURLcode) -> Result<TransferResponse, TransferFailure> {
        if code == CURLE_OK {
            guard headersEnded else {
                return .failure(TransferFailure(
                    kind: .transferFailure,
                    message: "the connection closed before the response's headers ended"
                ))
            }
            return .success(makeResponse())
        }
        if headersEnded, lastStatus != 200 || !request.failsOnLargeBody, bodyCut || undecodable(code) {
            var response = makeResponse()
            response.bodyTruncated = true
            return .success(response)
        }
        return .failure(makeFailure(code))
    }

    /// Builds the response from the handle's information.
    func makeResponse() -> TransferResponse {
        var response = TransferResponse(status: longInfo(CURLINFO_RESPONSE_CODE), headers: headers, body: body, url: request.url)
        response.redirectURL = stringInfo(CURLINFO_REDIRECT_URL)
        response.remoteAddress = stringInfo(CURLINFO_PRIMARY_IP) ?? ""
        response.remotePort = longInfo(CURLINFO_PRIMARY_PORT)
        response.httpVersion = Self.versionName(longInfo(CURLINFO_HTTP_VERSION))
        if request.collectCertificates {
            response.certificates = certificates()
        }
        response.timings = TransferTimings(
            nameLookup: secondsInfo(CURLINFO_NAMELOOKUP_TIME_T),
            connect: secondsInfo(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: secondsInfo(CURLINFO_APPCONNECT_TIME_T),
            firstByte: secondsInfo(CURLINFO_STARTTRANSFER_TIME_T),
            total: secondsInfo(CURLINFO_TOTAL_TIME_T)
        )
        return response
    }

    /// Whether libcurl ended the transfer because it could not decode the body as its
    /// `Content-Encoding` says: `CURLE_BAD_CONTENT_ENCODING`, or a write error none of this
    /// transfer's callbacks caused (libcurl 7.88's gzip decoder reports bytes after the end of
    /// the compressed stream as `CURLE_WRITE_ERROR`).
    private func undecodable(_ code: CURLcode) -> Bool {
        code == CURLE_BAD_CONTENT_ENCODING
            || code == CURLE_WRITE_ERROR && !bodyLimitExceeded && !bodyCut && !headerLimitExceeded && announcedLength == nil && conflictingLengths == nil
    }

    /// Builds the failure for a transfer that ended with `code`.
    func makeFailure(_ code: CURLcode) -> TransferFailure {
        if let conflictingLengths {
            return TransferFailure(
                kind: .invalidResponse,
                curlCode: Int(code.rawValue),
                message: "the answer names two different lengths (Content-Length: \(conflictingLengths.first) and \(conflictingLengths.second)); it is not valid HTTP")
        }
        var text = String(cString: errorBuffer)
        if code == CURLE_WRITE_ERROR, undecodable(code) {
            text = "bytes follow the end of the compressed data"
        }
        let code = undecodable(code) ? CURLE_BAD_CONTENT_ENCODING : code
        let verifyResult = longInfo(CURLINFO_SSL_VERIFYRESULT)
        if text.isEmpty {
            text = Self.describe(code)
        }
        let kind = FailureClassifier.classify(
            curlCode: Int(code.rawValue),
            tlsVerifyResult: verifyResult,
            errorText: text,
            bodyLimitExceeded: bodyLimitExceeded || announcedLength != nil,
            // Private only when no allowed address was tried: else that one failed to connect.
            refusedPrivateAddress: !refusedAddresses.isEmpty && openedSockets == 0,
            headerLimitExceeded: headerLimitExceeded,
            connected: !(stringInfo(CURLINFO_PRIMARY_IP) ?? "").isEmpty,
            descriptorShortage: descriptorShortage != nil || Self.failureMayBeDescriptorShortage(Int(code.rawValue)) && Self.descriptorsExhausted()
        )
        switch kind {
        case .timeout where text.contains("host '(nil)'"):
            // libcurl 7.88's words for a transfer whose time ran out while it waited for a
            // connection (one per host, all busy), before any name was asked: not a DNS problem.
            text = "the time ran out while the request waited for a connection to the host (one at a time, all in use; an HTTP/2 server multiplexes them): \(text)"
        case .privateAddress:
            text = "refused to connect to private or reserved address \(refusedAddresses.joined(separator: ", ")) (\(text))"
        case .connectFailure where !refusedAddresses.isEmpty:
            text += " (refused private or reserved address \(refusedAddresses.joined(separator: ", ")))"
        case .tooLarge where bodyLimitExceeded:
            text = "the decoded body is larger than \(request.maxBodyBytes) bytes"
        case .tooLarge:
            let announced = announcedLength.map { "\($0) bytes" } ?? "a body"
            text = "the answer announces \(announced) (Content-Length), more than the \(request.maxBodyBytes) allowed"
        case .invalidResponse where code == CURLE_BAD_CONTENT_ENCODING:
            text = "the body cannot be decoded as its Content-Encoding says (\(text))"
        case .headersTooLarge where headerLimitExceeded:
            text = "the response's header and trailer lines exceed \(request.maxHeaderBytes) bytes"
        case .headersTooLarge:
            text = "a response header or trailer line is longer than libcurl's limit of 100 KiB (libcurl: \(text))"
        case .descriptorsExhausted:
            let reason = descriptorShortage.map { String(cString: strerror($0)) } ?? "Too many open files"
            text = "no file descriptor left for the transfer (\(reason)): \(text)"
        case .threadsExhausted:
            text = "no thread could be started to resolve the name (\(text))"
        default:
            break
        }
        if quickExit, code == CURLE_OPERATION_TIMEDOUT, text.contains("Resolving timed out") {
            AbandonedLookups.noteAbandoned(now: UInt64(ccurl_monotonic_ns()))
        }
        var failure = TransferFailure(kind: kind, curlCode: Int(code.rawValue), message: text, tlsVerifyResult: verifyResult)
        // libcurl 7.88 times the connect only once the whole connection (TLS included) is made;
        // the address a connection was made to is set as soon as the TCP connect is.
        failure.reached = secondsInfo(CURLINFO_APPCONNECT_TIME_T) > 0 ? .secured
            : (!(stringInfo(CURLINFO_PRIMARY_IP) ?? "").isEmpty ? .connected : .nothing)
        if headersEnded, lastStatus >= 200 {
            // A whole header block came before the failure (a 200 whose body was too large,
            // stalled or cut): its status and headers are known, and said.
            var response = makeResponse()
            response.body = []
            failure.response = response
        }
        return failure
    }

    /// Whether a failure with this curl code can come from a descriptor shortage outside our
    /// socket callback: name resolution (the resolver's sockets and files), CA files, curl's own
    /// pipes and sockets.
    private static func failureMayBeDescriptorShortage(_ code: Int) -> Bool {
        [CurlCode.couldntResolveHost, CurlCode.couldntConnect, CurlCode.sslCACertBadFile, CurlCode.sslConnectError,
         CurlCode.sslCertProblem, CurlCode.failedInit, CurlCode.outOfMemory, CurlCode.recvError, CurlCode.sendError]
            .contains(code)
    }

    /// Whether this process is out of file descriptors, or so close to its limit that a failure
    /// may have come from it: opening `/dev/null` fails with `EMFILE` or `ENFILE`, or descriptor
    /// `limit - descriptorHeadroom` is in use.
    ///
    /// The probe runs after the failure, when what the failed step had opened (the resolver's
    /// files and sockets, a CA file) is closed again, so one free descriptor proves nothing near
    /// the limit. Descriptors are handed out lowest first, so one that high is taken only when
    /// nearly all below it are.
    static func descriptorsExhausted() -> Bool {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == EMFILE || errno == ENFILE }
        close(fd)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max,
              let high = Int32(exactly: Int(clamping: limit.rlim_cur) - descriptorHeadroom)
        else { return false }
        return high < 0 || fcntl(high, F_GETFD) != -1
    }

    /// Free descriptors below which a failure that can come from a shortage counts as one: about
    /// what a name resolution and a TLS set-up open at once (the resolver's files and socket, the
    /// CA file, the transfer's sockets).
    static let descriptorHeadroom = 16

    private func longInfo(_ info: CURLINFO) -> Int {
        guard let easy else { return 0 }
        var value = 0
        return ccurl_easy_getinfo_long(easy, info, &value) == CURLE_OK ? value : 0
    }

    private func stringInfo(_ info: CURLINFO) -> String? {
        guard let easy else { return nil }
        var value: UnsafePointer<CChar>?
        guard ccurl_easy_getinfo_string(easy, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    private func secondsInfo(_ info: CURLINFO) -> Double {
        guard let easy else { return 0 }
        var microseconds: curl_off_t = 0
        guard ccurl_easy_getinfo_off_t(easy, info, &microseconds) == CURLE_OK else { return 0 }
        return Double(microseconds) / 1_000_000
    }

    private static func versionName(_ version: Int) -> String {
        switch version {
        case ccurl_http_version_1_0: return "1.0"
        case ccurl_http_version_1_1: return "1.1"
        case ccurl_http_version_2_0: return "2"
        case ccurl_http_version_3: return "3"
        default: return ""
        }
    }

    private func certificates() -> [PeerCertificate] {
        guard let easy else { return [] }
        var info: UnsafeMutablePointer<curl_certinfo>?
        guard ccurl_easy_getinfo_certinfo(easy, &info) == CURLE_OK, let info, let chain = info.pointee.certinfo else {
            return []
        }
        var result: [PeerCertificate] = []
        for index in 0..<Int(max(0, info.pointee.num_of_certs)) {
            var fields: [(String, String)] = []
            var node = chain[index]
            while let current = node {
                if let data = current.pointee.data {
                    let line = String(cString: data)
                    if let colon = line.firstIndex(of: ":") {
                        fields.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
                    }
                }
                node = current.pointee.next
            }
            result.append(PeerCertificate(fields: fields))
        }
        return result
    }
}

extension PeerCertificate {
    /// Builds a certificate description from libcurl's `CURLINFO_CERTINFO` fields
    /// (`Subject`, `Issuer`, `Start date`, `Expire date`, `X509v3 Subject Alternative Name`).
    init(fields: [(String, String)]) {
        func field(_ name: String) -> String {
            fields.first { $0.0 == name }?.1.trimmingWhitespace() ?? ""
        }
        let names = field("X509v3 Subject Alternative Name")
            .split(separator: ",")
            .map { entry -> String in
                let trimmed = String(entry).trimmingWhitespace()
                for prefix in ["DNS:", "IP Address:", "IP:"] where trimmed.hasPrefix(prefix) {
                    return String(trimmed.dropFirst(prefix.count))
                }
                return trimmed
            }
            .filter { !$0.isEmpty }
        self.init(
            subject: field("Subject"),
            issuer: field("Issuer"),
            notBefore: field("Start date"),
            notAfter: field("Expire date"),
            subjectAltNames: names
        )
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
