import CurlTransport
import Foundation

/// Downloads association files under the rules Apple's downloader applies: HTTPS only,
/// no redirects, `.well-known` then the legacy root path on 404, a decoded-size cap, timeouts,
/// transient failures retried, private addresses refused unless allowed.
public struct AASAFetcher: RouteSide {
    /// The path devices request first.
    public static let wellKnownPath = "/.well-known/apple-app-site-association"
    /// The legacy path tried after a 404 (the Apple CDN never reads it).
    public static let legacyRootPath = "/apple-app-site-association"

    /// Hosts admitted beyond `--concurrency` at most. The transport runs at most `--concurrency`
    /// transfers and starts the next queued one on its own thread the moment one finishes, so a few
    /// hosts waiting in its queue keep the curl thread from waiting for a task thread to hand it the
    /// next host; every admitted host is a suspended task, so the queue stays small instead of
    /// growing with the concurrency (it was `--concurrency` more, 2,048 tasks at 1,024).
    /// Timeouts start when a transfer starts.
    public static let admissionSlack = 32

    /// How many hosts a window admits at once for `concurrency` transfers: the concurrency plus at
    /// most ``admissionSlack`` (and at most the concurrency again).
    public static func admissionLimit(concurrency: Int) -> Int {
        let concurrency = max(1, concurrency)
        return concurrency + min(concurrency, admissionSlack)
    }

    /// The transport (a CDN fetcher for the same run shares it).
    let transport: any HTTPTransferring
    /// The origin route makes its requests itself.
    var requester: AASAFetcher { self }
    /// The download options.
    public let options: FetchOptions

    /// Creates a fetcher over a transport (``CurlClient`` in the tool).
    public init(transport: any HTTPTransferring, options: FetchOptions) {
        self.transport = transport
        self.options = options
    }

    /// Fetches every planned host from its origin through the run's fetch stage
    /// (``RouteFetcher/fetchAll(_:conditions:progress:)``: admission in plan order, at most
    /// ``admissionLimit(concurrency:)`` hosts admitted). Results come back in plan order.
    ///
    /// - Parameter progress: called after each host finishes, with the count done and the result.
    public func fetchAll(
        _ fetches: [PlannedFetch],
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void = { _, _ in }
    ) async -> [HostFetchResult] {
        await RouteFetcher(origin: self, cdn: CDNFetcher(transport: transport, options: options)).fetchAll(fetches, progress: progress)
    }

    /// Fetches one host's file from the origin: `.well-known`, then the legacy root path on 404.
    ///
    /// With `conditional`, the requests carry its validators and a 304 answer is judged on its
    /// stored file (`ok`, HTTP status 304). After a 403, one more request with another user agent
    /// (``UserAgentCheck``): when that one gets the file, the result keeps its code
    /// (`http-client-error`, what Apple's crawler sees) and gains the `user-agent-blocked` warning.
    public func fetch(host: String, startOrder: Int = 0, conditional: ConditionalRequest? = nil) async -> HostFetchResult {
        await fetch(host: host, startOrder: startOrder, conditional: conditional, answered: nil)
    }

    /// ``fetch(host:startOrder:conditional:)`` where the first request (``firstRequest(host:conditional:)``)
    /// was already answered with `answered`.
    func fetch(host: String, startOrder: Int, conditional: ConditionalRequest?, answered: Answer?) async -> HostFetchResult {
        var attempts: [FetchAttempt] = []
        let wellKnownURL = Self.wellKnownURL(host)
        let primary = await fetchWithRetries(url: wellKnownURL, attempts: &attempts, conditional: conditional, answered: answered)
        var result = evaluate(primary, host: host, url: wellKnownURL)
        if case .response(let response, _) = primary, response.status == 403, !Task.isCancelled,
           let finding = await UserAgentCheck.afterForbidden(url: wellKnownURL, agent: options.userAgent, options: options, transport: transport) {
            result.findings.append(finding)
        }

        if case .response(let response, _) = primary, response.status == 404 {
            let rootURL = Self.legacyRootURL(host)
            // On the loop and connection the 404 came over (no second TLS handshake).
            let fallback = await fetchWithRetries(url: rootURL, attempts: &attempts, conditional: conditional, after: response.place)
            let rootResult = evaluate(fallback, host: host, url: rootURL)
            if rootResult.code == "ok" {
                result = rootResult
                result.findings.insert(Self.legacyRootPathWarning(host: host), at: 0)
            } else {
                let rootState = rootResult.httpStatus.map { "HTTP \($0), \(rootResult.code)" } ?? rootResult.code
                result.findings.append(.info(
                    "legacy-root-path-tried",
                    "the legacy root path was tried too: \(rootState)",
                    location: rootURL
                ))
            }
        }
        result.attempts = attempts
        result.startOrder = startOrder
        return result
    }

    /// The URL of a host's file at `.well-known`.
    public static func wellKnownURL(_ host: String) -> String { "https://\(host)\(wellKnownPath)" }

    /// The URL of a host's file at the legacy root path.
    public static func legacyRootURL(_ host: String) -> String { "https://\(host)\(legacyRootPath)" }

    /// The warning on a file found only at the legacy root path.
    static func legacyRootPathWarning(host: String) -> Finding {
        .warning(
            "legacy-root-path",
            "the file is served only at \(legacyRootPath); Apple's CDN reads only \(wellKnownPath), so iOS 14+ devices never see it",
            location: legacyRootURL(host),
            fix: "serve the file at \(wellKnownURL(host))"
        )
    }

    // MARK: - The first request alone (the fetch stage's path without a task)

    /// What one request gave and how long it took, in milliseconds.
    typealias Answer = (result: Result<TransferResponse, TransferFailure>, milliseconds: Int)

    /// The origin's first request is `.well-known`.
    func firstURL(for host: String) -> String { Self.wellKnownURL(host) }

    /// The verdict on the `.well-known` outcome when it decides the host alone; `nil` after a
    /// 403 (the user-agent check is due) or a 404 (the legacy path is).
    func decided(_ outcome: Outcome, host: String, url: String) -> HostFetchResult? {
        if case .response(let response, _) = outcome, response.status == 403 || response.status == 404 { return nil }
        return evaluate(outcome, host: host, url: url)
    }

    /// The outcome of a URL whose first request was answered with `answered`, when no other
    /// request is due for it (see ``fetchWithRetries(url:attempts:conditional:answered:)``).
    func settledOutcome(url: String, attempts: inout [FetchAttempt], conditional: ConditionalRequest?, answered: Answer) -> Outcome? {
        let relies = options.extraCAFile != nil
        if relies, case .failure(let failure) = answered.result, failure.kind == .tlsUntrusted { return nil }
        let outcome = answered.result.map(reliesOnExtraCA: relies)
        if !options.retryDelays.isEmpty, isTransient(outcome) { return nil }
        attempts.append(Self.attempt(url: url, answered))
        return notModified(outcome, conditional: conditional?.applying(to: url, maxSize: options.maxSize))
    }

    // MARK: - One URL, with retries and the trust-store fallback

    enum Outcome {
        case response(TransferResponse, reliesOnExtraCA: Bool)
        case failure(TransferFailure)
        /// A 304 to a conditional request, as the stored response it confirms.
        case notModified(TransferResponse, reliesOnExtraCA: Bool)
    }

    /// `after`: the first request follows up on the transfer that ran there (see
    /// `TransferRequest.after`); retries, which come after a pause, do not.
    func fetchWithRetries(url: String, attempts: inout [FetchAttempt], conditional: ConditionalRequest? = nil, answered: Answer? = nil,
                          after: TransferPlace? = nil) async -> Outcome {
        let conditional = conditional?.applying(to: url, maxSize: options.maxSize)
        var outcome = await fetchOnce(url: url, attempts: &attempts, headers: conditional?.requestHeaders ?? [], answered: answered, after: after)
        for delay in options.retryDelays {
            guard isTransient(outcome), !Task.isCancelled else { break }
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            outcome = await fetchOnce(url: url, attempts: &attempts, headers: conditional?.requestHeaders ?? [])
        }
        return notModified(outcome, conditional: conditional)
    }

    /// A 304 to a conditional request: the stored file stands.
    private func notModified(_ outcome: Outcome, conditional: ConditionalRequest?) -> Outcome {
        if let conditional, case .response(let response, let reliesOnExtraCA) = outcome, response.status == 304 {
            return .notModified(conditional.response(for: response), reliesOnExtraCA: reliesOnExtraCA)
        }
        return outcome
    }

    func isTransient(_ outcome: Outcome) -> Bool {
        switch outcome {
        case .response(let response, _):
            return (500..<600).contains(response.status) || response.status == 429
        case .notModified:
            return false
        case .failure(let failure):
            switch failure.kind {
            case .dnsFailure, .connectFailure, .timeout, .transferFailure: return true
            default: return false
            }
        }
    }

    /// One request. With `--cacert`, the extra CA is tried first (as `curl --cacert` does); when
    /// the chain is untrusted there, the system store is tried, so the result says which one it needed.
    private func fetchOnce(url: String, attempts: inout [FetchAttempt], headers: [String] = [], answered: Answer? = nil,
                           after: TransferPlace? = nil) async -> Outcome {
        let first = await request(url: url, caFile: options.extraCAFile, attempts: &attempts, headers: headers, answered: answered, after: after)
        guard options.extraCAFile != nil else { return first.map(reliesOnExtraCA: false) }
        if case .failure(let failure) = first, failure.kind == .tlsUntrusted {
            return await request(url: url, caFile: nil, attempts: &attempts, headers: headers).map(reliesOnExtraCA: false)
        }
        return first.map(reliesOnExtraCA: true)
    }

    /// The statuses after which another request to the same host follows at once: the legacy path
    /// after a 404, the user-agent check after a 403. Only their connections are kept for reuse on
    /// the origin route (HTTP/1.1); the CDN's one HTTP/2 connection is always kept.
    static let followedStatuses: Set<Int> = [403, 404]

    /// The request of one URL with this fetcher's options.
    func transferRequest(url: String, caFile: String?, headers: [String]) -> TransferRequest {
        var request = TransferRequest(
            url: url,
            headers: headers,
            userAgent: options.userAgent,
            connectTimeout: options.connectTimeout,
            maxTime: options.maxTime,
            maxBodyBytes: options.maxSize,
            caFile: caFile,
            resolve: options.resolve,
            connectTo: options.connectTo,
            allowPrivateAddresses: options.allowPrivateAddresses,
            httpVersion: options.httpVersion,
            verifyPeer: options.verifyPeer,
            collectCertificates: options.collectCertificates
        )
        request.keepConnectionAfter = Self.followedStatuses
        return request
    }

    /// Performs one request (or takes `answered`, the answer it already got) and notes the attempt.
    private func request(url: String, caFile: String?, attempts: inout [FetchAttempt], headers: [String] = [], answered: Answer? = nil,
                         after: TransferPlace? = nil) async -> Result<TransferResponse, TransferFailure> {
        let answer: Answer
        if let answered {
            answer = answered
        } else {
            let started = ContinuousClock.now
            let result: Result<TransferResponse, TransferFailure>
            do {
                var request = transferRequest(url: url, caFile: caFile, headers: headers)
                request.after = after
                result = .success(try await transport.perform(request))
            } catch {
                result = .failure(error)
            }
            answer = (result, Self.milliseconds(ContinuousClock.now - started))
        }
        attempts.append(Self.attempt(url: url, answer))
        return answer.result
    }

    /// Whole milliseconds of a duration.
    static func milliseconds(_ elapsed: Duration) -> Int {
        Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The attempt an answer makes.
    private static func attempt(url: String, _ answer: Answer) -> FetchAttempt {
        switch answer.result {
        case .success(let response):
            FetchAttempt(url: url, httpStatus: response.status, code: "ok",
                         remoteAddress: response.remoteAddress.isEmpty ? nil : response.remoteAddress,
                         milliseconds: answer.milliseconds)
        case .failure(let failure):
            FetchAttempt(url: url, httpStatus: failure.response?.status, code: failure.kind.rawValue,
                         remoteAddress: failure.response.flatMap { $0.remoteAddress.isEmpty ? nil : $0.remoteAddress },
                         milliseconds: answer.milliseconds)
        }
    }

    // MARK: - Verdict on one outcome

    /// The verdict on an outcome. `stored`: the response's body is one this fetcher stored, so
    /// a signed file's body is its content already (see ``classify(_:into:stored:)``).
    func evaluate(_ outcome: Outcome, host: String, url: String, stored: Bool = false) -> HostFetchResult {
        switch outcome {
        case .failure(let failure):
            let code = failure.kind.rawValue
            let message = Self.describe(failure, host: host, options: options)
            // The status and headers of an answer that broke off after them (a 200 too large,
            // stalled or cut) are the host's too: kept with the failure.
            return HostFetchResult(
                host: host, route: .origin, url: url, code: code, reason: message, httpStatus: failure.response?.status,
                headers: failure.response?.headers.map { HTTPHeader(name: $0.name, value: $0.value) } ?? [],
                findings: [.error(code, message, location: url, fix: Self.fix(for: failure.kind))]
            )
        case .response(let response, let reliesOnExtraCA):
            var result = HostFetchResult(
                host: host, route: .origin, url: url, code: "ok", reason: "", httpStatus: response.status,
                headers: response.headers.map { HTTPHeader(name: $0.name, value: $0.value) },
                reliesOnExtraCA: reliesOnExtraCA
            )
            classify(response, into: &result, stored: stored)
            return result
        case .notModified(let response, let reliesOnExtraCA):
            var result = evaluate(.response(response, reliesOnExtraCA: reliesOnExtraCA), host: host, url: url, stored: true)
            result.httpStatus = 304
            if result.code == "ok" { result.reason = "HTTP 304 Not Modified: the stored file (\(response.body.count) bytes) stands" }
            return result
        }
    }

    private func classify(_ response: TransferResponse, into result: inout HostFetchResult, stored: Bool) {
        let status = response.status
        let url = result.url
        func fail(_ code: String, _ reason: String, fix: String? = nil) {
            result.code = code
            result.reason = reason
            result.findings.append(.error(code, reason, location: url, fix: fix))
        }
        switch status {
        case 200:
            break
        case 304:
            // A 3xx, so `http-redirect` as every 3xx (SPEC), but with nothing to redirect to: "not
            // modified" answers a conditional request, and this one had no validators (a
            // conditional request's 304 never gets here: it confirms the stored file).
            fail("http-redirect", "HTTP 304 Not Modified to a request without If-None-Match or If-Modified-Since; Apple's downloader takes only a 200",
                 fix: "answer 200 with the file to unconditional requests")
            return
        case 300..<400:
            let location = response.redirectURL ?? response.header("Location")
            result.redirectLocation = location
            // A 60 KB Location made a line as long; the JSON's redirectLocation keeps it whole.
            let shown = location.map { $0.count > 300 ? String($0.prefix(300)) + "… (\($0.utf8.count) bytes)" : $0 }
            fail("http-redirect", "HTTP \(status) redirect to \(shown ?? "(no Location header)"); Apple's downloader never follows redirects",
                 fix: "serve the file itself at \(url) with status 200")
            return
        case 429:
            fail("http-client-error", "HTTP 429 Too Many Requests (rate limited); retried \(options.retryDelays.count) times",
                 fix: "exempt the AASA path and the AASA-Bot user agent from rate limiting")
            return
        case 400..<500:
            let hint = status == 403
                ? "allow every IP address and user agent (Apple's CDN sends \(options.userAgent)) to read the file"
                : "serve the file at \(url)"
            fail("http-client-error", "HTTP \(status): the server denied the file", fix: hint)
            return
        case 500..<600:
            fail("http-server-error", "HTTP \(status) after \(options.retryDelays.count) retries; devices retry later",
                 fix: "fix the server error at \(url)")
            return
        default:
            fail("http-unexpected-status", "HTTP \(status): only 200 delivers the file", fix: "answer 200 with the file")
            return
        }

        let contentType = response.header("Content-Type")
        let mediaType = contentType.map { type in
            EntryText.trimmed(type.utf8.firstIndex(of: UInt8(ascii: ";")).map { type[..<$0] } ?? type[...]).lowercased()
        }
        var body = response.body
        switch CMSUnwrapper.body(body, mediaType: mediaType) {
        case .plain:
            break
        case .signed(let content):
            body = content
            result.findings.append(CMSUnwrapper.signedFinding(size: response.body.count, content: content.count, location: url))
        case .unusable where stored && CMSUnwrapper.signedMediaTypes.contains(mediaType ?? ""):
            // A signed file as stored: its content, kept with the headers it came with (a 304
            // confirms it, or the store judges it again). Its size as served is its Content-Length.
            result.findings.append(CMSUnwrapper.signedFinding(size: response.header("Content-Length").flatMap { Int(EntryText.trimmed($0[...])) },
                                                              content: body.count, location: url))
        case .unusable:
            // It was read as JSON: "unexpected byte 0x82 after the end of the JSON value".
            fail("invalid-json", CMSUnwrapper.unusableReason, fix: "serve the plain JSON file")
            return
        }
        let signedMediaType = mediaType == "application/pkcs7-mime" && result.findings.contains { $0.code == "signed-file" }
        if mediaType != "application/json" && !signedMediaType {
            result.findings.append(.warning(
                "content-type",
                "served as \(contentType.map { "'\($0)'" } ?? "no Content-Type"); Apple expects application/json",
                location: url,
                fix: "serve apple-app-site-association with Content-Type: application/json"
            ))
        }
        result.body = body
        switch AASADecoder.decode(body) {
        case .document(let document, let findings):
            result.document = document
            result.findings += findings
            result.reason = "HTTP 200, \(response.body.count) bytes"
        case .invalidJSON(let error, let findings):
            result.findings += findings
            let looksHTML = Self.looksLikeHTML(response.body)
            fail("invalid-json",
                 "the body is not valid JSON (line \(error.line), column \(error.column): \(error.message))"
                    + (looksHTML ? "; it looks like an HTML page" : ""),
                 fix: looksHTML ? "the web server answers this path with a page (a single-page-app fallback?); serve the JSON file there"
                                : "fix the JSON syntax")
        case .notAnAssociationFile(let reason, let findings):
            result.findings += findings
            fail("not-an-association-file", "valid JSON but not an association file: \(reason)",
                 fix: "the top level must be an object with applinks, webcredentials, activitycontinuation, appclips or authsrv")
        }
    }

    static func looksLikeHTML(_ body: [UInt8]) -> Bool {
        let prefix = String(decoding: body.prefix(512), as: UTF8.self).lowercased()
        return prefix.contains("<!doctype html") || prefix.contains("<html") || prefix.contains("<head") || prefix.contains("<body")
    }

    /// - Parameter now: this machine's time, named in the messages of certificates whose dates
    ///   do not fit it (a clock years off fails every certificate so).
    static func describe(_ failure: TransferFailure, host: String, options: FetchOptions, now: Date = Date()) -> String {
        // Only the certificate date failures name the clock (formatting it is not free).
        var clock: String { "this machine's clock says \(Timestamp.string(now))" }
        switch failure.kind {
        case .dnsFailure: return "\(host) does not resolve: \(failure.message)"
        case .connectFailure: return "no connection to \(host): \(failure.message)"
        case .timeout: return "timed out (connect \(format(options.connectTimeout)) s, total \(format(options.maxTime)) s): \(failure.message)"
        case .transferFailure: return "the connection broke mid-response: \(failure.message)"
        case .privateAddress: return "\(failure.message); Apple's CDN refuses private and reserved addresses (SWCERR00202)"
        case .tlsUntrusted: return "the certificate chain does not end at a trusted root: \(failure.message)"
        case .tlsExpired: return "the certificate has expired (\(clock)): \(failure.message)"
        case .tlsNotYetValid: return "the certificate is not valid yet (\(clock)): \(failure.message)"
        case .tlsHostnameMismatch: return "the certificate does not name \(host): \(failure.message)"
        case .tlsFailure: return "TLS failed: \(failure.message)"
        case .tooLarge: return "\(failure.message); devices reject files over 128 KiB"
        case .invalidRequest: return "the request could not be made: \(failure.message)"
        case .invalidResponse: return "the answer is not valid HTTP/1.1 or HTTP/2: \(failure.message)"
        case .headersTooLarge: return "the response headers are too large: \(failure.message)"
        case .descriptorsExhausted: return "not fetched, this process ran out of file descriptors: \(failure.message)"
        case .threadsExhausted: return "not fetched, this process could not start a thread: \(failure.message)"
        case .cancelled: return "cancelled"
        }
    }

    static func fix(for kind: TransferFailureKind) -> String? {
        switch kind {
        case .dnsFailure: "publish DNS records for the host, or pass --resolve / --connect-to for a test farm"
        case .connectFailure: "make the host accept HTTPS connections on port 443"
        case .timeout: "make the server answer the AASA path within a few seconds"
        case .transferFailure: "check the server or proxy that closes the connection"
        case .privateAddress: "serve the file from a public address, use ?mode=developer or ?mode=managed, or pass --allow-private for a test farm"
        case .tlsUntrusted: "install a certificate from a publicly trusted CA with the full intermediate chain"
        case .tlsExpired: "renew the certificate"
        case .tlsNotYetValid: "check the certificate's start date, and this machine's clock"
        case .tlsHostnameMismatch: "use a certificate whose subject alternative names include the host"
        case .tlsFailure: "check the server's TLS configuration (protocol versions, ciphers)"
        case .tooLarge: "shrink the file below 128 KiB (substitution variables and wildcards help)"
        case .invalidResponse: "make the server answer HTTPS requests with valid HTTP/1.1 or HTTP/2"
        case .headersTooLarge: "send fewer or shorter response headers (and no endless chunked trailers)"
        case .descriptorsExhausted: "raise the open-file limit (ulimit -n) or lower --concurrency, and run again"
        case .threadsExhausted: "raise the limit on processes (ulimit -u, or the cgroup's pids.max) or lower --concurrency, and run again"
        case .invalidRequest, .cancelled: nil
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

extension Result where Success == TransferResponse, Failure == TransferFailure {
    fileprivate func map(reliesOnExtraCA: Bool) -> AASAFetcher.Outcome {
        switch self {
        case .success(let response): .response(response, reliesOnExtraCA: reliesOnExtraCA)
        case .failure(let failure): .failure(failure)
        }
    }
}
