/// Why a transfer failed before a complete HTTP response arrived.
public enum TransferFailureKind: String, Sendable, Codable, Hashable {
    /// The host name did not resolve.
    case dnsFailure = "dns-failure"
    /// No TCP connection could be made (refused, unreachable).
    case connectFailure = "connect-failure"
    /// The connect or total time ran out, including a server that stalls mid-body.
    case timeout
    /// The connection broke mid-response (reset, truncated body, empty reply).
    case transferFailure = "transfer-failure"
    /// Every address of the host is loopback, private, link-local or reserved and those are not allowed.
    case privateAddress = "private-address"
    /// The certificate chain does not end at a trusted root (self-signed, unknown CA).
    case tlsUntrusted = "tls-untrusted"
    /// A certificate in the chain has expired.
    case tlsExpired = "tls-expired"
    /// A certificate in the chain is not valid yet.
    case tlsNotYetValid = "tls-not-yet-valid"
    /// The certificate does not name the host.
    case tlsHostnameMismatch = "tls-hostname-mismatch"
    /// Any other TLS failure (handshake, protocol, cipher).
    case tlsFailure = "tls-failure"
    /// The decoded body grew past ``TransferRequest/maxBodyBytes``.
    case tooLarge = "too-large"
    /// The request could not be made at all (bad URL, unsupported option); a bug or bad input.
    case invalidRequest = "invalid-request"
    /// The answer is not valid HTTP (an HTTP/0.9 reply, garbage, a status line libcurl refuses,
    /// a body that is not in the `Content-Encoding` it names).
    case invalidResponse = "invalid-response"
    /// A header line, or all header and trailer lines together, exceed the limit
    /// (``TransferRequest/maxHeaderBytes``, and libcurl's 100 KiB for one line).
    case headersTooLarge = "headers-too-large"
    /// This process ran out of file descriptors (`EMFILE`/`ENFILE`): a failure of the run, never
    /// of the host, so it is not recorded as the host's result.
    case descriptorsExhausted = "descriptors-exhausted"
    /// This process could not start a thread (a curl loop, or libcurl's resolver thread for a
    /// name): its limit on processes (`ulimit -u`, a cgroup's `pids.max`) is reached. A failure of
    /// the run, never of the host, so it is not recorded as the host's result.
    case threadsExhausted = "threads-exhausted"
    /// The client was shut down before the transfer finished.
    case cancelled
}

extension TransferFailureKind {
    /// Whether this process ran short of something (descriptors, threads): the run's failure,
    /// never the host's.
    public var isProcessShortage: Bool { self == .descriptorsExhausted || self == .threadsExhausted }

    /// Whether the failure is this run's, never the host's: a shortage, a request libcurl refused
    /// to make (`invalid-request`: options it cannot use), or a stop. No request reached the host.
    public var isRunFailure: Bool { isProcessShortage || self == .invalidRequest || self == .cancelled }
}

/// How far a transfer got.
public enum TransferPhase: Int, Sendable, Hashable {
    /// No connection (the name, or the connect, did not get through).
    case nothing
    /// A TCP connection, no finished TLS handshake.
    case connected
    /// A TLS handshake done.
    case secured
}

/// A failed transfer: the kind, curl's own code and message for the record.
public struct TransferFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, classified.
    public var kind: TransferFailureKind
    /// libcurl's `CURLcode` (0 when the failure was detected outside curl).
    public var curlCode: Int
    /// libcurl's error buffer text, or a description of the failure.
    public var message: String
    /// OpenSSL's verification result (`CURLINFO_SSL_VERIFYRESULT`), 0 when none.
    public var tlsVerifyResult: Int
    /// The status line and headers that arrived before the transfer failed, when a whole header
    /// block did (a 200 whose body was too large, stalled or broke off); its body is empty.
    public var response: TransferResponse?
    /// How far the transfer got before it failed: a TCP connection made, a TLS handshake done
    /// (libcurl's connect and handshake times), so a failure is told to the phase it came in.
    public var reached: TransferPhase = .nothing

    /// Creates a failure.
    public init(kind: TransferFailureKind, curlCode: Int = 0, message: String, tlsVerifyResult: Int = 0, response: TransferResponse? = nil) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
        self.tlsVerifyResult = tlsVerifyResult
        self.response = response
    }

    /// The kind and the message, e.g. `timeout: Connection timed out after 1001 milliseconds`.
    public var description: String { "\(kind.rawValue): \(message)" }
}

/// A certificate the server presented, as libcurl describes it.
public struct PeerCertificate: Sendable, Hashable, Codable {
    /// Subject distinguished name.
    public var subject: String
    /// Issuer distinguished name.
    public var issuer: String
    /// Start of validity, as printed by libcurl (e.g. `Jan  1 00:00:00 2026 GMT`).
    public var notBefore: String
    /// End of validity, as printed by libcurl.
    public var notAfter: String
    /// DNS names and addresses from the subject alternative name extension.
    public var subjectAltNames: [String]

    /// Creates a certificate description.
    public init(subject: String, issuer: String, notBefore: String, notAfter: String, subjectAltNames: [String]) {
        self.subject = subject
        self.issuer = issuer
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectAltNames = subjectAltNames
    }
}

/// Timings of one transfer, in seconds from its start.
public struct TransferTimings: Sendable, Hashable, Codable {
    /// Name resolution done.
    public var nameLookup: Double
    /// TCP connected.
    public var connect: Double
    /// TLS handshake done.
    public var tlsHandshake: Double
    /// First response byte.
    public var firstByte: Double
    /// Whole transfer.
    public var total: Double

    /// Creates timings.
    public init(nameLookup: Double = 0, connect: Double = 0, tlsHandshake: Double = 0, firstByte: Double = 0, total: Double = 0) {
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.total = total
    }
}

/// Where a transfer ran: the loop of a ``CurlClient``. A follow-up request to the same host that
/// names it (``TransferRequest/after``) runs on that loop ahead of its queue, so it can reuse the
/// connection the first transfer left open instead of making a new TLS handshake.
public struct TransferPlace: Sendable, Hashable {
    let loop: Int
}

/// A complete HTTP response (any status), never following redirects.
public struct TransferResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// Response headers of the final response, in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The decoded body (after `Content-Encoding`), at most ``TransferRequest/maxBodyBytes`` bytes.
    public var body: [UInt8]
    /// Whether ``body`` is only the start of the answer's body: an answer other than 200 whose body
    /// was longer than ``TransferRequest/maxBodyBytes`` or could not be decoded (the transfer
    /// ended there; its status and headers are whole).
    public var bodyTruncated = false
    /// The URL fetched.
    public var url: String
    /// For a 3xx answer: the absolute target of its `Location` header.
    public var redirectURL: String?
    /// The address actually connected to.
    public var remoteAddress: String
    /// The port actually connected to.
    public var remotePort: Int
    /// The negotiated HTTP version (`1.1`, `2`).
    public var httpVersion: String
    /// The server's certificate chain when ``TransferRequest/collectCertificates`` was set.
    public var certificates: [PeerCertificate]
    /// Timings.
    public var timings: TransferTimings
    /// Where the transfer ran (set by ``CurlClient``; not compared by `==`): give it to a
    /// follow-up request to the same host as ``TransferRequest/after``.
    public var place: TransferPlace?

    /// Creates a response.
    public init(
        status: Int,
        headers: [(name: String, value: String)],
        body: [UInt8],
        url: String,
        redirectURL: String? = nil,
        remoteAddress: String = "",
        remotePort: Int = 0,
        httpVersion: String = "1.1",
        certificates: [PeerCertificate] = [],
        timings: TransferTimings = TransferTimings()
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
        self.redirectURL = redirectURL
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.httpVersion = httpVersion
        self.certificates = certificates
        self.timings = timings
    }

    /// The value of the first header with this name (ASCII letters compared case-insensitively:
    /// field names are ASCII tokens, RFC 9110 §5.1).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Compares every field (headers by name and value, in order).
    public static func == (lhs: TransferResponse, rhs: TransferResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.bodyTruncated == rhs.bodyTruncated && lhs.url == rhs.url
            && lhs.headers.map { "\($0.name):\($0.value)" } == rhs.headers.map { "\($0.name):\($0.value)" }
            && lhs.redirectURL == rhs.redirectURL && lhs.remoteAddress == rhs.remoteAddress
            && lhs.remotePort == rhs.remotePort && lhs.httpVersion == rhs.httpVersion
            && lhs.certificates == rhs.certificates && lhs.timings == rhs.timings
    }

    /// Hashes status, URL and body (enough to spread responses; equality checks the rest).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(status)
        hasher.combine(url)
        hasher.combine(body)
    }
}

/// Something that performs GET transfers. ``CurlClient`` is the real one; unit tests of pure
/// logic may provide a scripted one.
public protocol HTTPTransferring: Sendable {
    /// Performs one GET and returns the response, or throws a ``TransferFailure``.
    func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse

    /// Starts one GET; `completion` gets what ``perform(_:)`` would return or throw, exactly once.
    /// ``CurlClient`` queues the request as a plain value (no task) and runs `completion` on its
    /// loop thread; the default implementation runs ``perform(_:)`` in a task.
    @discardableResult
    func start(_ request: TransferRequest, completion: @escaping TransferCompletion) -> TransferTicket

    /// Cancels a transfer started with ``start(_:completion:)``: its completion gets a
    /// ``TransferFailureKind/cancelled`` failure unless it has finished already.
    func cancel(_ ticket: TransferTicket)
}

extension HTTPTransferring {
    /// Runs ``perform(_:)`` in a task and hands its result to `completion`.
    @discardableResult
    public func start(_ request: TransferRequest, completion: @escaping TransferCompletion) -> TransferTicket {
        let task = Task {
            do throws(TransferFailure) {
                completion(.success(try await perform(request)))
            } catch {
                completion(.failure(error))
            }
        }
        return TransferTicket(loop: 0, id: 0, task: task)
    }

    /// Cancels the task of a ticket from the default ``start(_:completion:)``.
    public func cancel(_ ticket: TransferTicket) {
        ticket.task?.cancel()
    }
}

extension String {
    /// Whether the two texts are the same once ASCII letters are folded to lower case (other
    /// bytes compared as they are), without allocating: how HTTP field names are compared, on the
    /// path of every response.
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        let (a, b) = (utf8, other.utf8)
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            guard x | 0x20 == y | 0x20, (0x61...0x7A).contains(x | 0x20) else { return false }
        }
        return true
    }
}
