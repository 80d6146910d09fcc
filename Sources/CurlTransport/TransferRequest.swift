/// The HTTP version a transfer negotiates.
public enum HTTPVersion: String, Sendable, Codable {
    /// HTTP/1.1 only: the cheapest for a single request per TLS connection (origin fetches).
    case http1_1 = "1.1"
    /// HTTP/2 over TLS when the server offers it in ALPN, multiplexed on a shared connection (CDN fetches).
    case http2 = "2"
}

/// A request body sent with `POST` (a webhook's event), with its media type.
public struct TransferBody: Sendable, Hashable {
    /// The bytes sent, as they are.
    public var bytes: [UInt8]
    /// The `Content-Type` header sent with them, e.g. `application/json`.
    public var contentType: String

    /// Creates a body.
    public init(bytes: [UInt8], contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
    }
}

/// One request (a GET, or a POST when ``body`` is set), described without any libcurl type.
public struct TransferRequest: Sendable, Hashable {
    /// The absolute `https://` URL to fetch (`http://` too when ``allowPlainHTTP`` is set). Hosts
    /// must already be ASCII (Punycode).
    public var url: String
    /// The body of a `POST`; `nil` (the default) sends a `GET`. Redirects are never followed
    /// either way.
    public var body: TransferBody?
    /// Whether `http://` URLs are allowed besides `https://` (webhooks on a private network);
    /// `false` for every association file, which Apple's downloader fetches over HTTPS only.
    public var allowPlainHTTP = false
    /// Extra request headers, each `Name: value` (for example `If-None-Match: "abc"`).
    public var headers: [String]
    /// The `User-Agent` header.
    public var userAgent: String
    /// Seconds allowed to connect (TCP and TLS), as curl's `--connect-timeout`.
    public var connectTimeout: Double
    /// Seconds allowed for the whole transfer, as curl's `--max-time`.
    public var maxTime: Double
    /// Largest decoded body accepted, in bytes. A 200 answer that announces or sends more fails
    /// (``TransferFailureKind/tooLarge``) as soon as it does, unless ``failsOnLargeBody`` is off;
    /// any other answer ends there with its status and headers (``TransferResponse/bodyTruncated``).
    public var maxBodyBytes: Int
    /// Whether a 200 answer's body over ``maxBodyBytes`` fails the transfer (an association file
    /// is judged by its body); off, it is cut there as any other answer's is (a webhook's answer,
    /// decided by its status).
    public var failsOnLargeBody = true
    /// Most bytes of header and trailer lines accepted per transfer (every response of it,
    /// interim ones and the trailers of a chunked body included); the transfer is aborted as soon
    /// as more arrive (``TransferFailureKind/headersTooLarge``). libcurl's own cap on a response's
    /// headers is the same, 300 KiB; it has none on trailers.
    public var maxHeaderBytes: Int = TransferRequest.defaultMaxHeaderBytes
    /// The default of ``maxHeaderBytes``: 300 KiB.
    public static let defaultMaxHeaderBytes = 300 * 1024
    /// PEM file of CA certificates to trust *instead of* the system store; `nil` uses the system store.
    public var caFile: String?
    /// curl `--resolve` entries: `HOST:PORT:ADDR[,ADDR]`.
    ///
    /// ``CurlClient`` shares one DNS cache between its transfers, and libcurl keeps `--resolve`
    /// entries in that cache, so an entry also applies to later transfers of the same client for that
    /// `HOST:PORT`. Give every request of a client the same entries (as the command line does).
    public var resolve: [String]
    /// curl `--connect-to` entries: `HOST1:PORT1:HOST2:PORT2` (empty parts match anything).
    public var connectTo: [String]
    /// Whether connections to loopback, private, link-local and other reserved addresses are allowed.
    public var allowPrivateAddresses: Bool
    /// The HTTP version to negotiate.
    public var httpVersion: HTTPVersion
    /// Whether to verify the server certificate (chain and name). Only ever `false` for diagnosis.
    public var verifyPeer: Bool
    /// Whether to collect the server's certificate chain in ``TransferResponse/certificates``; such a
    /// request makes a new connection (the chain comes with a handshake).
    public var collectCertificates: Bool
    /// Requests with the same key run on the same loop of a ``CurlClient`` with several loops, so
    /// they can share its connections (one HTTP/2 connection for every request to a CDN). `nil`,
    /// the default: an HTTP/2 request, or any request of a client with a per-host connection
    /// limit, is kept on the loop of its URL's host; any other goes to the least-loaded loop.
    public var affinity: String?
    /// A follow-up of the transfer that ran at this place (``TransferResponse/place``), to the same
    /// host: it runs on the same loop, ahead of the transfers queued there, so that it can reuse
    /// the connection that transfer left open (the legacy path after a 404). `nil`: any loop.
    public var after: TransferPlace?
    /// The final statuses after which an HTTP/1.1 connection is kept for another request to the
    /// same host (the legacy path after a 404); after any other answer it is closed as the
    /// transfer ends, so a crawl of many hosts does not hold idle TLS connections, each with its
    /// TLS state, that no request will use. `nil`, the default: always kept, as libcurl does.
    /// HTTP/2 connections, which other streams share, are always kept.
    public var keepConnectionAfter: Set<Int>?

    /// Creates a request with the defaults Apple's downloader uses.
    public init(
        url: String,
        headers: [String] = [],
        userAgent: String = "AASA-Bot/1.0.0",
        connectTimeout: Double = 5,
        maxTime: Double = 10,
        maxBodyBytes: Int = 128 * 1024,
        caFile: String? = nil,
        resolve: [String] = [],
        connectTo: [String] = [],
        allowPrivateAddresses: Bool = false,
        httpVersion: HTTPVersion = .http1_1,
        verifyPeer: Bool = true,
        collectCertificates: Bool = false,
        affinity: String? = nil
    ) {
        self.url = url
        self.headers = headers
        self.userAgent = userAgent
        self.connectTimeout = connectTimeout
        self.maxTime = maxTime
        self.maxBodyBytes = maxBodyBytes
        self.caFile = caFile
        self.resolve = resolve
        self.connectTo = connectTo
        self.allowPrivateAddresses = allowPrivateAddresses
        self.httpVersion = httpVersion
        self.verifyPeer = verifyPeer
        self.collectCertificates = collectCertificates
        self.affinity = affinity
    }
}
