import Foundation

/// One HTTP request made while fetching a host (a host may need several: retries, the legacy root
/// path, a second try with the system trust store).
public struct FetchAttempt: Sendable, Hashable, Codable {
    /// The URL requested.
    public var url: String
    /// The HTTP status, when a response arrived.
    public var httpStatus: Int?
    /// `ok` for a response that was read, or the failure code of the transfer.
    public var code: String
    /// The address connected to, when known.
    public var remoteAddress: String?
    /// Milliseconds the request took.
    public var milliseconds: Int

    /// Creates an attempt record.
    public init(url: String, httpStatus: Int?, code: String, remoteAddress: String?, milliseconds: Int) {
        self.url = url
        self.httpStatus = httpStatus
        self.code = code
        self.remoteAddress = remoteAddress
        self.milliseconds = milliseconds
    }

    /// What the request came to, for a person: `HTTP 200`, or the failure code with the status of a
    /// whole header block that came before it (`too-large (after HTTP 200)`): the failure first.
    public var outcome: String {
        code == "ok" ? httpStatus.map { "HTTP \($0)" } ?? "ok"
            : code + (httpStatus.map { " (after HTTP \($0))" } ?? "")
    }
}

/// What downloading one host's file gave, before any app ID is considered.
public struct HostFetchResult: Sendable {
    /// The ASCII host.
    public var host: String
    /// The route used.
    public var route: Route
    /// The URL of the response the verdict rests on.
    public var url: String
    /// `ok` when a file was decoded, else the failure code (`timeout`, `http-redirect`, `invalid-json`, …).
    public var code: String
    /// One line on what happened.
    public var reason: String
    /// The HTTP status of the response the verdict rests on.
    public var httpStatus: Int?
    /// The decoded file, when `code` is `ok`.
    public var document: AASADocument?
    /// The body bytes, when a response with a body was read.
    public var body: [UInt8]?
    /// Response headers of the response the verdict rests on.
    public var headers: [HTTPHeader]
    /// The redirect target of a 3xx answer.
    public var redirectLocation: String?
    /// Whether the certificate verified only thanks to `--cacert`.
    public var reliesOnExtraCA: Bool
    /// Warnings and errors about the download and the file.
    public var findings: [Finding]
    /// Every request made, in order.
    public var attempts: [FetchAttempt]
    /// Position in which this download started (0 first).
    public var startOrder: Int
    /// For an answer of Apple's CDN: its `Apple-*` and cache headers, decoded.
    public var cdn: CDNHeaders?
    /// When the download ended, as the run that records it saw it arrive (a result is recorded
    /// after the hosts started before it, so later): the store records it only over an older
    /// download (``HostUpdate/downloadedAt``); `nil`: the recording time stands for it.
    public var finishedAt: Date? = nil

    /// Creates a result.
    public init(
        host: String, route: Route, url: String, code: String, reason: String, httpStatus: Int? = nil,
        document: AASADocument? = nil, body: [UInt8]? = nil, headers: [HTTPHeader] = [],
        redirectLocation: String? = nil, reliesOnExtraCA: Bool = false, findings: [Finding] = [],
        attempts: [FetchAttempt] = [], startOrder: Int = 0
    ) {
        self.host = host
        self.route = route
        self.url = url
        self.code = code
        self.reason = reason
        self.httpStatus = httpStatus
        self.document = document
        self.body = body
        self.headers = headers
        self.redirectLocation = redirectLocation
        self.reliesOnExtraCA = reliesOnExtraCA
        self.findings = findings
        self.attempts = attempts
        self.startOrder = startOrder
    }
}

extension HostFetchResult {
    /// Codes that say this run could not fetch the host for a reason of its own: it ran short of
    /// something (`descriptors-exhausted`, `threads-exhausted`: it could not start a thread), or
    /// libcurl refused the request its options make (`invalid-request`: a CA file that is gone,
    /// an entry libcurl cannot read). A run with such results fails (exit 2) and names the code.
    public static let shortageCodes: Set<String> = ["descriptors-exhausted", "threads-exhausted", "invalid-request"]

    /// Codes that say something about this run, not about the host: `cancelled` (the run stopped)
    /// and the ``shortageCodes``. Such a result is never recorded in the store.
    public static let runErrorCodes: Set<String> = shortageCodes.union(["cancelled"])

    /// Whether the result is a failure of the run rather than of the host (``runErrorCodes``).
    public var isRunError: Bool { Self.runErrorCodes.contains(code) }
}

/// A response header.
public struct HTTPHeader: Sendable, Hashable, Codable {
    /// The name as sent.
    public var name: String
    /// The value.
    public var value: String

    /// Creates a header.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
