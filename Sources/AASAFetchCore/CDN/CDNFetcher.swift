import CurlTransport
import Foundation

/// Downloads association files through Apple's CDN: `GET {base}{host}` over HTTP/2, every
/// request multiplexed on one connection to the CDN, and the CDN's `Apple-*` headers decoded into
/// the result with a `cdn-…` code when it has no file to give.
///
/// Codes: `ok` (and the body codes of the origin route: `invalid-json`, `not-an-association-file`,
/// …) on a 200; `cdn-origin-failure` for a 404 with `Apple-Failure-Reason` (the CDN could not get
/// the file from the origin: `SWCERR00101` bad HTTP status, `SWCERR00301` timeout, `SWCERR00202`
/// private or reserved address…); `cdn-not-found` for a 404 without a reason; `cdn-unknown-domain`
/// for a 405; `cdn-http-error` for any other status; `cdn-unreachable` when no answer came from the CDN.
public struct CDNFetcher: RouteSide {
    /// The CDN's base URL devices use.
    public static let defaultBase = "https://app-site-association.cdn-apple.com/a/v1/"

    /// The most CDN fetches a run has under way at once, whatever `--concurrency` says: every CDN
    /// request rides on one HTTP/2 connection, and a server need allow no more streams on it than
    /// this (RFC 9113 §6.5.2 recommends at least 100; libcurl asks for 100 too). A fetch beyond
    /// the server's limit cannot run: libcurl would keep it pending with its easy handle, buffers
    /// and timers, which costs memory and CPU for nothing (at 1,024 fetches on one connection the
    /// CDN route ran 30 % slower in `scripts/bench-crawl`).
    public static let maxStreams = 100

    /// The base URL; the host is appended.
    public let base: String
    let fetcher: AASAFetcher

    /// Creates a CDN fetcher over a transport; `options` are the run's, forced to HTTP/2.
    public init(transport: any HTTPTransferring, options: FetchOptions, base: String = CDNFetcher.defaultBase) {
        var cdnOptions = options
        cdnOptions.httpVersion = .http2
        self.base = Self.normalized(base)
        fetcher = AASAFetcher(transport: transport, options: cdnOptions)
    }

    /// Whether a `--cdn-base` value is an absolute `https://` URL.
    public static func isValidBase(_ base: String) -> Bool {
        // White space or control characters: libcurl refuses the URL at every request.
        guard !base.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let url = URL(string: base), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty
        else {
            return false
        }
        if let port = url.port, !(1...65535).contains(port) { return false }
        return url.query == nil && url.fragment == nil
    }

    /// The CDN URL of a host's file.
    public func url(for host: String) -> String { base + host }

    /// The CDN URL of a host's file under `base` (a `--cdn-base` value).
    public static func url(for host: String, base: String) -> String { normalized(base) + host }

    /// A base URL ending in `/`.
    static func normalized(_ base: String) -> String { base.hasSuffix("/") ? base : base + "/" }

    /// Fetches one host's file from the CDN (retrying transient failures as the origin route does).
    /// With `conditional` (a refresh of a stored CDN copy), the request carries its validators and
    /// a 304 is judged on the stored copy (`ok`, HTTP status 304).
    public func fetch(host: String, startOrder: Int = 0, conditional: ConditionalRequest? = nil) async -> HostFetchResult {
        await fetch(host: host, startOrder: startOrder, conditional: conditional, answered: nil)
    }

    /// ``fetch(host:startOrder:conditional:)`` where the first request (``firstRequest(host:conditional:)``)
    /// was already answered with `answered`.
    func fetch(host: String, startOrder: Int, conditional: ConditionalRequest?, answered: AASAFetcher.Answer?) async -> HostFetchResult {
        let url = url(for: host)
        var attempts: [FetchAttempt] = []
        let outcome = await fetcher.fetchWithRetries(url: url, attempts: &attempts, conditional: conditional, answered: answered)
        var result = judge(outcome, host: host, url: url)
        result.attempts = attempts
        result.startOrder = startOrder
        return result
    }

    /// The CDN's requests are made as the origin route's are, over HTTP/2.
    var requester: AASAFetcher { fetcher }

    /// The CDN's first request is its only one (retries aside).
    func firstURL(for host: String) -> String { url(for: host) }

    /// Every CDN outcome decides the host (``judge(_:host:url:)``).
    func decided(_ outcome: AASAFetcher.Outcome, host: String, url: String) -> HostFetchResult? {
        judge(outcome, host: host, url: url)
    }

    /// The verdict on one CDN outcome (also used by `diagnose`).
    func judge(_ outcome: AASAFetcher.Outcome, host: String, url: String) -> HostFetchResult {
        switch outcome {
        case .failure(let failure):
            // A stopped run, a shortage of descriptors or threads, or a request libcurl refused
            // (a --cdn-base it cannot use) is this run's failure, not the CDN's: never recorded.
            if failure.kind.isRunFailure {
                let message = "no request to the CDN at \(url): \(failure.kind.rawValue): \(failure.message)"
                return HostFetchResult(host: host, route: .cdn, url: url, code: failure.kind.rawValue, reason: message,
                                       findings: [.error(failure.kind.rawValue, message, location: url)])
            }
            // An answer that came but cannot be used (too large, not HTTP, endless headers) is the
            // CDN's answer, not a missing one.
            if failure.kind == .tooLarge || failure.kind == .invalidResponse || failure.kind == .headersTooLarge {
                let message = "the CDN's answer at \(url) cannot be used: \(failure.kind.rawValue): \(failure.message)"
                return HostFetchResult(host: host, route: .cdn, url: url, code: "cdn-http-error", reason: message,
                                       httpStatus: failure.response?.status,
                                       headers: failure.response?.headers.map { HTTPHeader(name: $0.name, value: $0.value) } ?? [],
                                       findings: [.error("cdn-http-error", message, location: url,
                                                         fix: "the CDN serves what the origin served it: check the origin's file and answer")])
            }
            let message = "no answer from the CDN at \(url): \(failure.kind.rawValue): \(failure.message)"
            return HostFetchResult(
                host: host, route: .cdn, url: url, code: "cdn-unreachable", reason: message,
                findings: [.error("cdn-unreachable", message, location: url,
                                  fix: "check the network path to the CDN (or --cdn-base); the origin route does not depend on it")]
            )
        case .response(let response, _), .notModified(let response, _):
            let headers = CDNHeaders(response: response)
            var result: HostFetchResult
            if response.status == 200 {
                result = fetcher.evaluate(outcome, host: host, url: url)
                if result.code == "ok", case .response = outcome {
                    result.reason = "the CDN serves a copy (\(headers.cacheSummary))"
                }
            } else {
                result = HostFetchResult(
                    host: host, route: .cdn, url: url, code: "", reason: "", httpStatus: response.status,
                    headers: response.headers.map { HTTPHeader(name: $0.name, value: $0.value) }
                )
                let finding = Self.failureFinding(headers, host: host, url: url)
                result.code = finding.code
                result.reason = finding.message
                result.findings = [finding]
            }
            result.route = .cdn
            result.cdn = headers
            return result
        }
    }

    /// The finding for a CDN answer other than 200: the `cdn-…` code, what it means, what to change.
    static func failureFinding(_ headers: CDNHeaders, host: String, url: String) -> Finding {
        let status = headers.httpStatus
        if status == 405 {
            return .error("cdn-unknown-domain",
                          "the CDN answers 405 for \(host): it does not know the domain (no installed app lists it yet)",
                          location: url,
                          fix: "the CDN starts serving a domain within about 24 hours after an app listing it is installed; until then test with ?mode=developer")
        }
        if status == 404, headers.failureReason != nil {
            // The origin the CDN names, when it is this host's: an Apple-From naming another
            // host is quoted, not taken for the place to fix.
            let named = headers.from
            let namesAnother = named.map { URLParts($0)?.host.map(URLParts.normalisedHost) != URLParts.normalisedHost(host) } ?? false
            let origin = namesAnother ? AASAFetcher.wellKnownURL(host) : named ?? AASAFetcher.wellKnownURL(host)
            var message = "Apple's CDN could not get the file from \(origin): \(headers.logLine ?? "")"
            if namesAnother, let named { message += " (its Apple-From names another host: \(named))" }
            if let tryDirect = headers.tryDirect { message += " (Apple-Try-Direct: \(tryDirect))" }
            message += "; \(headers.cacheSummary)"
            let fix: String
            switch headers.swcError {
            case "SWCERR00101":
                switch headers.originStatus {
                case 403?:
                    fix = "the origin answers 403 to Apple's crawler: allow every IP address and the AASA-Bot user agent (WAF, bot protection, geo rules) to read \(AASAFetcher.wellKnownPath)"
                case .some(let code) where (300..<400).contains(code):
                    fix = "serve the file itself at \(origin) with status 200; the CDN follows no redirects"
                case 404?:
                    fix = "serve the file at \(origin) (the CDN reads only /.well-known, never the root path)"
                default:
                    fix = "make \(origin) answer 200 with the file to every client"
                }
            case "SWCERR00301":
                fix = "the origin did not answer Apple's crawler in time: make \(origin) answer within a few seconds from every network (check firewalls that drop rather than refuse)"
            case "SWCERR00202":
                fix = "publish public addresses for \(host): the CDN refuses private and reserved ones (use ?mode=developer or ?mode=managed for internal hosts)"
            default:
                fix = "fix what the failure reason names at \(origin); the CDN keeps a failure for its max-age before it asks again"
            }
            return .error("cdn-origin-failure", message, location: url, fix: fix)
        }
        if status == 404 {
            return .error("cdn-not-found", "the CDN answers 404 for \(host) without an Apple-Failure-Reason; it has no copy of the file",
                          location: url, fix: "serve the file at https://\(host)\(AASAFetcher.wellKnownPath); the CDN asks the origin again after its max-age")
        }
        return .error("cdn-http-error", "the CDN answers HTTP \(status) for \(host)", location: url,
                      fix: "retry later; this is the CDN's own status, not the origin's")
    }
}
