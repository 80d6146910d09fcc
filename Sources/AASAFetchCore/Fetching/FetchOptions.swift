import CurlTransport

/// How downloads are made. The defaults are Apple's.
public struct FetchOptions: Sendable, Hashable {
    /// The `User-Agent` (Apple's CDN sends `AASA-Bot/1.0.0` to origin servers).
    public var userAgent: String = "AASA-Bot/1.0.0"
    /// Seconds allowed to connect, as curl's `--connect-timeout`.
    public var connectTimeout: Double = 5
    /// Seconds allowed for one request, as curl's `--max-time`.
    public var maxTime: Double = 10
    /// Largest decoded body accepted, in bytes.
    public var maxSize: Int = 128 * 1024
    /// A PEM file of extra CA certificates to trust (`--cacert`); results that rely on it say so.
    public var extraCAFile: String?
    /// curl `--resolve` entries.
    public var resolve: [String] = []
    /// curl `--connect-to` entries.
    public var connectTo: [String] = []
    /// Whether loopback, private and reserved addresses may be contacted (`--allow-private`).
    public var allowPrivateAddresses: Bool = false
    /// Pauses before each retry of a transient failure, in seconds; its count is the number of retries.
    public var retryDelays: [Double] = [1, 3]
    /// The most downloads in flight at once.
    public var concurrency: Int = 32
    /// Download threads (curl loops) of the client; `nil`: one per core the process may use (`--threads`).
    public var threads: Int?

    /// The HTTP version negotiated: HTTP/1.1 for origins, HTTP/2 for the Apple CDN (one shared connection).
    public var httpVersion: HTTPVersion = .http1_1
    /// Whether the certificate is verified; `false` only when diagnosing what a failing certificate says.
    public var verifyPeer: Bool = true
    /// Whether responses carry the server's certificate chain (for diagnosis).
    public var collectCertificates: Bool = false

    /// Creates options with Apple's defaults.
    public init() {}
}
