import AASAFetchCore
import AASAFetchTestSupport
import CurlTransport
import Foundation
import Synchronization
import Testing

/// The run logic without the network: a ``ScriptedTransport`` answers every request, so each
/// rule of the pipeline is checked alone — the legacy path after a 404, retries of transient
/// failures only, the `--cacert` fallback, conditional requests, the CDN route and its codes,
/// the user-agent check after a 403, and which step ``Diagnoser`` blames for each failure.
struct RunLogicTests {
    static let host = "example.com"
    static let wellKnown = "https://example.com/.well-known/apple-app-site-association"
    static let legacy = "https://example.com/apple-app-site-association"
    static let app = RefreshPolicyTests.app
    static let good = RefreshPolicyTests.good

    static var options: FetchOptions {
        var options = FetchOptions()
        options.retryDelays = [0, 0]
        return options
    }

    static func fetch(_ transport: ScriptedTransport, options: FetchOptions = options, conditional: ConditionalRequest? = nil) async -> HostFetchResult {
        await AASAFetcher(transport: transport, options: options).fetch(host: host, conditional: conditional)
    }

    // MARK: - AASAFetcher

    /// A redirect's reason shows at most 300 characters of its Location (a 60 KB one made a line
    /// as long); the result keeps it whole.
    @Test func aLongRedirectIsCutInItsReason() async {
        let location = "https://elsewhere.example/" + String(repeating: "a", count: 60_000)
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .status(301, headers: [("Location", location)]))
        let result = await Self.fetch(transport)
        #expect(result.code == "http-redirect")
        #expect(result.redirectLocation == location)
        #expect(result.reason.count < 500 && result.reason.contains("… (60026 bytes)"), "\(result.reason.prefix(400))")
    }

    @Test func legacyPathIsTriedOnlyAfterA404() async {
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .status(404))
        transport.on(Self.legacy, .json(Self.good))
        let result = await Self.fetch(transport)
        #expect(result.code == "ok")
        #expect(result.url == Self.legacy)
        #expect(result.findings.first?.code == "legacy-root-path")
        #expect(result.attempts.map(\.url) == [Self.wellKnown, Self.legacy])
        // Only a 403 or a 404 keeps the connection for the request that follows (the transport
        // closes it after any other answer: a crawl would hold idle TLS connections otherwise).
        #expect(transport.requests.map(\.keepConnectionAfter) == [[403, 404], [403, 404]])

        let both = ScriptedTransport()
        both.on(Self.wellKnown, .status(404))
        both.on(Self.legacy, .status(404))
        let missing = await Self.fetch(both)
        #expect(missing.code == "http-client-error")
        #expect(missing.url == Self.wellKnown, "the verdict rests on the well-known answer")
        #expect(missing.findings.map(\.code) == ["http-client-error", "legacy-root-path-tried"])

        for status in [403, 410, 500, 301] {
            let other = ScriptedTransport()
            other.on(Self.wellKnown, .status(status, headers: [("Location", "https://elsewhere.example/")]))
            other.on(Self.legacy, .json(Self.good))
            _ = await Self.fetch(other)
            #expect(other.requests(to: Self.legacy).isEmpty, "HTTP \(status): no legacy path")
        }
    }

    /// Only `application/json` (any case, any parameters, white space around it) passes without
    /// a `content-type` warning.
    @Test(arguments: [
        ("application/json", false), ("application/json; charset=utf-8", false), (" Application/JSON ;x", false),
        ("APPLICATION/JSON", false), ("\tapplication/json\t", false), ("text/html", true), ("application/jsonx", true),
        ("application/json\u{0}", true), ("application/ json", true), (";application/json", true), ("", true),
    ])
    func contentTypeIsJudgedByItsMediaType(contentType: String, warned: Bool) async {
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .status(200, headers: [("Content-Type", contentType)], body: Self.good))
        let result = await Self.fetch(transport)
        #expect(result.code == "ok")
        #expect(result.findings.contains { $0.code == "content-type" } == warned, "\(contentType)")
    }

    @Test func transientFailuresAreRetriedAndOthersAreNot() async {
        // 503, then a timeout, then the file: two retries (--retry-delays 0,0) and the file.
        let recovering = ScriptedTransport()
        recovering.on(Self.wellKnown, .status(503), .fail(.timeout), .json(Self.good))
        let recovered = await Self.fetch(recovering)
        #expect(recovered.code == "ok")
        #expect(recovered.attempts.map(\.code) == ["ok", "timeout", "ok"])
        #expect(recovered.attempts.map(\.httpStatus) == [503, nil, 200])

        let busy = ScriptedTransport()
        busy.on(Self.wellKnown, .status(503))
        let failed = await Self.fetch(busy)
        #expect(failed.code == "http-server-error")
        #expect(busy.requests.count == 3, "one try and two retries")

        let limited = ScriptedTransport()
        limited.on(Self.wellKnown, .status(429))
        #expect(await Self.fetch(limited).code == "http-client-error")
        #expect(limited.requests.count == 3, "429 is retried and keeps http-client-error")

        for answer in [ScriptedTransport.Answer.fail(.dnsFailure), .fail(.connectFailure), .fail(.transferFailure)] {
            let transport = ScriptedTransport()
            transport.on(Self.wellKnown, answer)
            _ = await Self.fetch(transport)
            #expect(transport.requests.count == 3)
        }
        for answer in [ScriptedTransport.Answer.status(403), .status(301), .fail(.tlsExpired), .fail(.privateAddress), .fail(.tooLarge)] {
            let transport = ScriptedTransport()
            transport.on(Self.wellKnown, answer)
            _ = await Self.fetch(transport)
            #expect(transport.requests.filter { $0.userAgent == FetchOptions().userAgent }.count == 1, "\(answer): not retried")
        }
        var none = Self.options
        none.retryDelays = []
        let once = ScriptedTransport()
        once.on(Self.wellKnown, .status(503))
        _ = await Self.fetch(once, options: none)
        #expect(once.requests.count == 1, "--retry-delays ''")
    }

    @Test func extraCAIsTriedFirstThenTheSystemStore() async {
        var options = Self.options
        options.extraCAFile = "/tmp/test-ca.pem"
        // Trusted through --cacert: the result says it relies on it.
        let custom = ScriptedTransport()
        custom.on(Self.wellKnown, when: { $0.caFile == "/tmp/test-ca.pem" }, .json(Self.good))
        let viaCustom = await Self.fetch(custom, options: options)
        #expect(viaCustom.code == "ok" && viaCustom.reliesOnExtraCA)
        #expect(custom.requests.count == 1)

        // Untrusted there, trusted by the system store: a second request without it.
        let system = ScriptedTransport()
        system.on(Self.wellKnown, when: { $0.caFile != nil }, .fail(.tlsUntrusted))
        system.on(Self.wellKnown, .json(Self.good))
        let viaSystem = await Self.fetch(system, options: options)
        #expect(viaSystem.code == "ok" && !viaSystem.reliesOnExtraCA)
        #expect(system.requests.map(\.caFile) == ["/tmp/test-ca.pem", nil])

        // Untrusted by both: tls-untrusted, and no retry (not transient).
        let neither = ScriptedTransport()
        neither.on(Self.wellKnown, .fail(.tlsUntrusted))
        #expect(await Self.fetch(neither, options: options).code == "tls-untrusted")
        #expect(neither.requests.count == 2)

        // Another TLS failure under --cacert is not tried against the system store.
        let expired = ScriptedTransport()
        expired.on(Self.wellKnown, .fail(.tlsExpired))
        #expect(await Self.fetch(expired, options: options).code == "tls-expired")
        #expect(expired.requests.count == 1)

        // Without --cacert, every request uses the system store only.
        let plain = ScriptedTransport()
        plain.on(Self.wellKnown, .json(Self.good))
        _ = await Self.fetch(plain)
        #expect(plain.requests.map(\.caFile) == [nil])
    }

    @Test func aConditionalRequestJudgesA304OnTheStoredFile() async {
        let conditional = ConditionalRequest(validators: CacheValidators(etag: "\"v1\"", lastModified: "Tue, 01 Dec 2026 00:00:00 GMT"),
                                             body: Array(Self.good.utf8), headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
                                             url: Self.wellKnown)
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, when: { $0.header("If-None-Match") == "\"v1\"" }, .status(304, headers: [("Cache-Control", "max-age=7200")]))
        let result = await Self.fetch(transport, conditional: conditional)
        #expect(result.code == "ok")
        #expect(result.httpStatus == 304)
        #expect(result.body == Array(Self.good.utf8))
        #expect(result.headers.contains { $0.name == "Cache-Control" && $0.value == "max-age=7200" }, "the 304's headers update the stored ones")
        #expect(transport.requests.first?.header("If-Modified-Since") == "Tue, 01 Dec 2026 00:00:00 GMT")
    }

    /// A stored file over this run's `--max-size` (approved under a larger one) is asked for
    /// without validators: a 304 would confirm what a download refuses as `too-large`.
    @Test func aStoredFileOverTheSizeLimitIsNotConfirmedByA304() async {
        let body = Array(Self.good.utf8)
        let conditional = ConditionalRequest(validators: CacheValidators(etag: "\"v1\""), body: body,
                                             headers: [HTTPHeader(name: "Content-Type", value: "application/json")], url: Self.wellKnown)
        var small = Self.options
        small.maxSize = body.count - 1
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, when: { $0.header("If-None-Match") != nil }, .status(304))
        transport.on(Self.wellKnown, .json(Self.good))
        let result = await Self.fetch(transport, options: small, conditional: conditional)
        #expect(result.code == "too-large", "\(result.code): \(result.reason)")
        #expect(transport.requests.map { $0.header("If-None-Match") } == [nil])
        // Within the limit, the validators go as before.
        small.maxSize = body.count
        let within = ScriptedTransport()
        within.on(Self.wellKnown, when: { $0.header("If-None-Match") != nil }, .status(304))
        #expect(await Self.fetch(within, options: small, conditional: conditional).httpStatus == 304)
    }

    /// An entry of a service Apple does not document never associates, and the fix says so: it
    /// told the user to add the app to `foo.apps`, which devices never read (and which listed it).
    @Test func anUnknownServiceIsNotToldToListTheApp() async {
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .json(#"{"foo":{"apps":["ABCDE12345.com.example.app"]},"applinks":{"details":[]}}"#))
        let result = await Self.fetch(transport)
        guard let document = result.document else {
            Issue.record("the file was not read: \(result.code) \(result.reason)")
            return
        }
        let finding = AssociationJudge.notListed("ABCDE12345.com.example.app", service: Service(name: "foo"), document: document,
                                                 host: Self.host, location: "foo:\(Self.host)")
        #expect(finding.code == "app-not-listed")
        #expect(finding.message.contains("'foo' is not a service Apple documents"), "\(finding.message)")
        #expect(finding.fix?.contains("foo.apps") == false, "\(finding.fix ?? "")")
    }

    /// A signed file is stored as its content, beside the headers it came with: a 304 confirming
    /// it is that file again, with its `signed-file` warning (it was `invalid-json`: the stored
    /// content was unwrapped a second time, with the CMS media type put back on it).
    @Test func a304ConfirmsASignedFileAsSigned() async {
        let conditional = ConditionalRequest(validators: CacheValidators(etag: "\"s1\""), body: Array(Self.good.utf8),
                                             headers: [HTTPHeader(name: "Content-Type", value: "application/pkcs7-mime"),
                                                       HTTPHeader(name: "Content-Length", value: "2048")],
                                             url: Self.wellKnown)
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, when: { $0.header("If-None-Match") == "\"s1\"" }, .status(304))
        let result = await Self.fetch(transport, conditional: conditional)
        #expect(result.code == "ok", "\(result.reason)")
        #expect(result.httpStatus == 304)
        #expect(result.document != nil)
        let signed = result.findings.first { $0.code == "signed-file" }
        #expect(signed?.message.hasPrefix("the file is CMS-signed (2048 bytes, \(Self.good.utf8.count) of content)") == true, "\(result.findings)")
        #expect(!result.findings.contains { $0.code == "content-type" })
    }

    /// Validators describe the response of one URL: the legacy path after a `.well-known` 404 is
    /// asked without the `.well-known` file's validators (a 304 there hid the 404 and another
    /// file), and `.well-known` without those of a file found at the legacy path.
    @Test func validatorsGoOnlyToTheURLThatServedTheFile() async {
        let stored = Array(Self.good.utf8)
        let fromWellKnown = ConditionalRequest(validators: CacheValidators(etag: "\"v1\"", lastModified: "Tue, 24 Nov 2026 10:00:00 GMT"),
                                               body: stored, headers: [], url: Self.wellKnown)
        let moved = ScriptedTransport()
        moved.on(Self.wellKnown, .status(404))
        moved.on(Self.legacy, when: { $0.header("If-None-Match") != nil || $0.header("If-Modified-Since") != nil }, .status(304))
        moved.on(Self.legacy, .json(RefreshPolicyTests.other))
        let result = await Self.fetch(moved, conditional: fromWellKnown)
        #expect(result.httpStatus == 200, "the legacy file itself, not the stored one")
        #expect(result.url == Self.legacy)
        #expect(result.body == Array(RefreshPolicyTests.other.utf8))
        #expect(result.findings.first?.code == "legacy-root-path")
        #expect(moved.requests.map { $0.header("If-None-Match") } == ["\"v1\"", nil])

        let fromLegacy = ConditionalRequest(validators: CacheValidators(etag: "\"v1\""), body: stored, headers: [], url: Self.legacy)
        let back = ScriptedTransport()
        back.on(Self.wellKnown, when: { $0.header("If-None-Match") != nil }, .status(304))
        back.on(Self.wellKnown, .json(RefreshPolicyTests.other))
        let wellKnown = await Self.fetch(back, conditional: fromLegacy)
        #expect(wellKnown.httpStatus == 200 && wellKnown.url == Self.wellKnown)
        #expect(back.requests.map { $0.header("If-None-Match") } == [nil])
        // The legacy path still asks conditionally for the file it served.
        let still = ScriptedTransport()
        still.on(Self.wellKnown, .status(404))
        still.on(Self.legacy, when: { $0.header("If-None-Match") == "\"v1\"" }, .status(304))
        let confirmed = await Self.fetch(still, conditional: fromLegacy)
        #expect(confirmed.code == "ok" && confirmed.httpStatus == 304)
        #expect(confirmed.findings.first?.code == "legacy-root-path")
    }

    @Test func aForbiddenAnswerIsCheckedOnceWithAnotherUserAgent() async {
        let blocking = ScriptedTransport()
        blocking.on(Self.wellKnown, when: { $0.userAgent == "AASA-Bot/1.0.0" }, .status(403))
        blocking.on(Self.wellKnown, .json(Self.good))
        let blocked = await Self.fetch(blocking)
        #expect(blocked.code == "http-client-error", "the code Apple's crawler gets")
        let warning = blocked.findings.first { $0.code == "user-agent-blocked" }
        #expect(warning?.severity == .warning)
        #expect(warning?.message == "AASA-Bot/1.0.0 gets HTTP 403 while browser gets HTTP 200")
        #expect(blocking.requests.map(\.userAgent) == ["AASA-Bot/1.0.0", UserAgentCheck.browserUserAgent])
        #expect(blocked.attempts.count == 1, "the check is not one of the file's attempts")

        let everyone = ScriptedTransport()
        everyone.on(Self.wellKnown, .status(403))
        #expect(!(await Self.fetch(everyone)).findings.contains { $0.code == "user-agent-blocked" })
        #expect(everyone.requests.count == 2)

        // A run that already sends the browser's agent checks with the device's.
        var browser = Self.options
        browser.userAgent = UserAgentCheck.browserUserAgent
        let asBrowser = ScriptedTransport()
        asBrowser.on(Self.wellKnown, when: { $0.userAgent == UserAgentCheck.browserUserAgent }, .status(403))
        asBrowser.on(Self.wellKnown, .json(Self.good))
        #expect((await Self.fetch(asBrowser, options: browser)).findings.contains { $0.code == "user-agent-blocked" })
        #expect(asBrowser.requests.last?.userAgent == UserAgentCheck.deviceUserAgent)
    }

    // MARK: - CDN route

    static let cdnBase = "https://cdn.test/a/v1/"

    /// An `Apple-From` naming another host than the one asked for is quoted, not taken for the
    /// place to fix (the fix told the user to repair the other host).
    @Test func anAppleFromNamingAnotherHostIsQuotedNotFollowed() async {
        let transport = ScriptedTransport()
        let cdn = CDNFetcher(transport: transport, options: Self.options, base: Self.cdnBase)
        for (host, from) in [("wrongfrom.test", "https://other.test/.well-known/apple-app-site-association"),
                             ("rightfrom.test", "https://RightFrom.test/.well-known/apple-app-site-association")] {
            transport.on(Self.cdnBase + host, .status(404, headers: [
                ("Apple-Failure-Reason", "SWCERR00101 Bad HTTP Response: 404 Not Found"), ("Apple-From", from),
            ]))
        }
        let wrong = await cdn.fetch(host: "wrongfrom.test")
        #expect(wrong.code == "cdn-origin-failure")
        let finding = wrong.findings.first { $0.code == "cdn-origin-failure" }
        #expect(finding?.message.hasPrefix("Apple's CDN could not get the file from https://wrongfrom.test/.well-known/apple-app-site-association:") == true,
                "\(finding?.message ?? "")")
        #expect(finding?.message.contains("(its Apple-From names another host: https://other.test/") == true)
        #expect(finding?.fix?.contains("other.test") == false, "\(finding?.fix ?? "")")
        let right = await cdn.fetch(host: "rightfrom.test").findings.first { $0.code == "cdn-origin-failure" }
        #expect(right?.message.hasPrefix("Apple's CDN could not get the file from https://RightFrom.test/") == true, "\(right?.message ?? "")")
        #expect(right?.message.contains("another host") == false)
    }

    @Test func theCDNRouteDecodesTheCDNsAnswers() async {
        let transport = ScriptedTransport()
        let cdn = CDNFetcher(transport: transport, options: Self.options, base: Self.cdnBase)
        transport.on(Self.cdnBase + "ok.test", .json(Self.good, headers: [("Age", "120"), ("Cache-Control", "max-age=3600,public")]))
        transport.on(Self.cdnBase + "blocked.test", .status(404, headers: [
            ("Apple-Failure-Reason", "SWCERR00101 Bad HTTP Response: 403 Forbidden"),
            ("Apple-Failure-Details", #"{"status":"403 Forbidden"}"#), ("Cache-Control", "max-age=3600,public"),
        ]))
        transport.on(Self.cdnBase + "nocopy.test", .status(404))
        transport.on(Self.cdnBase + "unknown.test", .status(405))
        transport.on(Self.cdnBase + "busy.test", .status(503), .status(503), .json(Self.good))
        transport.on(Self.cdnBase + "down.test", .fail(.connectFailure))
        transport.on(Self.cdnBase + "odd.test", .status(404, headers: [
            ("Apple-Failure-Reason", "SWCERR00999 Something"),
            ("Apple-Failure-Details", #"{"n":null,"b":true,"x":1,"nested":{"a":[1,2]},"q":"say \"hi\""}"#),
        ]))
        transport.on(Self.cdnBase + "refused.test", .fail(.invalidRequest))
        transport.on(Self.cdnBase + "huge.test", .fail(.tooLarge))
        // Age and max-age are RFC 9111 delta-seconds, digits only: anything else is no value.
        transport.on(Self.cdnBase + "negative.test", .json(Self.good, headers: [("Age", "-5"), ("Cache-Control", "max-age=-1")]))
        transport.on(Self.cdnBase + "signed.test", .json(Self.good, headers: [("Age", "+5"), ("Cache-Control", "s-maxage=99999999999999999999")]))

        let ok = await cdn.fetch(host: "ok.test")
        #expect(ok.code == "ok" && ok.route == .cdn && ok.cdn?.age == 120)
        #expect(ok.cdn?.maxAge == 3600)
        let negative = await cdn.fetch(host: "negative.test")
        #expect(negative.cdn?.age == nil && negative.cdn?.maxAge == nil, "\(String(describing: negative.cdn))")
        let signed = await cdn.fetch(host: "signed.test")
        #expect(signed.cdn?.age == nil && signed.cdn?.maxAge == Int(Int32.max), "\(String(describing: signed.cdn))")
        let blocked = await cdn.fetch(host: "blocked.test")
        #expect(blocked.code == "cdn-origin-failure")
        #expect(blocked.cdn?.swcError == "SWCERR00101" && blocked.cdn?.originStatus == 403)
        #expect(blocked.findings.first?.fix?.contains("AASA-Bot") == true)
        #expect(await cdn.fetch(host: "nocopy.test").code == "cdn-not-found")
        #expect(await cdn.fetch(host: "unknown.test").code == "cdn-unknown-domain")
        let busy = await cdn.fetch(host: "busy.test")
        #expect(busy.code == "ok" && busy.attempts.count == 3, "transient CDN failures are retried")
        #expect(await cdn.fetch(host: "down.test").code == "cdn-unreachable")
        // Values that are not strings stay JSON (they were Swift's descriptions: "1", "<null>",
        // "[\"a\": [1, 2]]"), and the log line is JSON too.
        let odd = await cdn.fetch(host: "odd.test")
        #expect(odd.cdn?.failureDetails == ["n": "null", "b": "true", "x": "1", "nested": #"{"a":[1,2]}"#, "q": #"say "hi""#], "\(String(describing: odd.cdn?.failureDetails))")
        #expect(odd.cdn?.logLine?.hasSuffix(#" -- {"b":"true","n":"null","nested":"{\"a\":[1,2]}","q":"say \"hi\"","x":"1"}"#) == true, "\(odd.cdn?.logLine ?? "")")
        // A request libcurl refused is the run's (never recorded); an answer too large is the CDN's.
        #expect(await cdn.fetch(host: "refused.test").code == "invalid-request")
        #expect(await cdn.fetch(host: "huge.test").code == "cdn-http-error")
        #expect(transport.requests.allSatisfy { $0.httpVersion == .http2 && $0.userAgent == "AASA-Bot/1.0.0" })
        #expect(!transport.requests.contains { $0.url.contains("/.well-known/") }, "the CDN route never asks the origin")
    }

    @Test func aRouteFetcherSendsEachFetchOverItsRouteWithItsOwnValidators() async {
        let transport = ScriptedTransport()
        let fetcher = RouteFetcher(origin: AASAFetcher(transport: transport, options: Self.options),
                                   cdn: CDNFetcher(transport: transport, options: Self.options, base: Self.cdnBase))
        transport.on(Self.wellKnown, when: { $0.header("If-None-Match") == "\"origin\"" }, .status(304))
        transport.on(Self.cdnBase + Self.host, when: { $0.header("If-None-Match") == "\"cdn\"" }, .status(304))
        let stored = Array(Self.good.utf8)
        let conditions = [
            HostKey(host: Self.host, route: .origin): ConditionalRequest(validators: CacheValidators(etag: "\"origin\""), body: stored, headers: [], url: Self.wellKnown),
            HostKey(host: Self.host, route: .cdn): ConditionalRequest(validators: CacheValidators(etag: "\"cdn\""), body: stored, headers: [], url: Self.cdnBase + Self.host),
        ]
        let fetches = [PlannedFetch(host: Self.host, route: .cdn, tier: 0, entryIndexes: []),
                       PlannedFetch(host: Self.host, route: .origin, tier: 0, entryIndexes: [])]
        let results = await fetcher.fetchAll(fetches, conditions: conditions)
        #expect(results.map(\.route) == [.cdn, .origin])
        #expect(results.map(\.httpStatus) == [304, 304])
        #expect(results.map(\.code) == ["ok", "ok"])
        #expect(transport.requests.count == 2)
    }

    // MARK: - The fetch window

    /// A run of hosts with every kind of first answer: those it decides alone (200, a redirect, an
    /// expired certificate, a 304 to a conditional request, invalid JSON, a CDN answer) and those
    /// that need more requests (a 404 and the legacy path, retries, the user-agent check after a
    /// 403, the `--cacert` fallback, a retried CDN answer).
    static func windowTransport(_ base: String) -> ScriptedTransport {
        let transport = ScriptedTransport()
        func url(_ host: String) -> String { "https://\(host)/.well-known/apple-app-site-association" }
        transport.on(url("ok.test"), .json(Self.good))
        transport.on(url("legacy.test"), .status(404))
        transport.on("https://legacy.test/apple-app-site-association", .json(Self.good))
        transport.on(url("flaky.test"), .status(503), .fail(.timeout), .json(Self.good))
        transport.on(url("forbidden.test"), when: { $0.userAgent == FetchOptions().userAgent }, .status(403))
        transport.on(url("forbidden.test"), .json(Self.good))
        transport.on(url("untrusted.test"), when: { $0.caFile != nil }, .fail(.tlsUntrusted))
        transport.on(url("untrusted.test"), .json(Self.good))
        transport.on(url("moved.test"), .status(301, headers: [("Location", "https://elsewhere.test/")]))
        transport.on(url("expired.test"), .fail(.tlsExpired))
        transport.on(url("stored.test"), when: { $0.header("If-None-Match") == "\"v1\"" }, .status(304))
        transport.on(url("html.test"), .status(200, headers: [("Content-Type", "text/html")], body: "<html></html>"))
        transport.on(base + "cdn-ok.test", .json(Self.good))
        transport.on(base + "cdn-missing.test", .status(404, headers: [("Apple-Failure-Reason", "SWCERR00101 Bad HTTP Response: 404")]))
        transport.on(base + "cdn-busy.test", .status(502), .json(Self.good))
        return transport
    }

    static let windowFetches: [PlannedFetch] =
        ["ok.test", "legacy.test", "flaky.test", "forbidden.test", "untrusted.test", "moved.test", "expired.test", "stored.test", "html.test"]
            .map { PlannedFetch(host: $0, route: .origin, tier: 0, entryIndexes: []) }
        + ["cdn-ok.test", "cdn-missing.test", "cdn-busy.test"].map { PlannedFetch(host: $0, route: .cdn, tier: 0, entryIndexes: []) }

    /// A result without its timings, to compare two fetches of the same host.
    static func comparable(_ result: HostFetchResult) -> String {
        let attempts = result.attempts.map { "\($0.url) \($0.httpStatus.map(String.init) ?? "-") \($0.code)" }
        // A certificate's message names the time it was judged at: not part of the comparison.
        let reason = result.reason.replacing(/\(this machine's clock says [^)]*\)/, with: "(this machine's clock)")
        return "\(result.host) \(result.route) \(result.startOrder) \(result.url) \(result.code) \(result.httpStatus.map(String.init) ?? "-") "
            + "\(reason) ca:\(result.reliesOnExtraCA) findings:\(result.findings.map(\.code)) attempts:\(attempts) "
            + "body:\(result.body?.count ?? -1) headers:\(result.headers.count) redirect:\(result.redirectLocation ?? "-")"
    }

    /// The window starts a host's first request without a task and goes on in a task only when
    /// more requests are due; every host's result is exactly what fetching it alone gives, with
    /// and without `--cacert`, and no request is made twice.
    @Test(arguments: [false, true])
    func theWindowGivesEachHostWhatFetchingItAloneGives(extraCA: Bool) async {
        var options = Self.options
        if extraCA { options.extraCAFile = "/tmp/test-ca.pem" }  // untrusted.test: the system store after the extra CA
        let stored = ConditionalRequest(validators: CacheValidators(etag: "\"v1\""), body: Array(Self.good.utf8), headers: [],
                                        url: "https://stored.test/.well-known/apple-app-site-association")
        let conditions = [HostKey(host: "stored.test", route: .origin): stored]

        let windowed = Self.windowTransport(Self.cdnBase)
        let window = RouteFetcher(origin: AASAFetcher(transport: windowed, options: options),
                                  cdn: CDNFetcher(transport: windowed, options: options, base: Self.cdnBase))
        let results = await window.fetchAll(Self.windowFetches, conditions: conditions)

        let alone = Self.windowTransport(Self.cdnBase)
        let single = RouteFetcher(origin: AASAFetcher(transport: alone, options: options),
                                  cdn: CDNFetcher(transport: alone, options: options, base: Self.cdnBase))
        var expected: [HostFetchResult] = []
        for (position, planned) in Self.windowFetches.enumerated() {
            expected.append(await single.fetch(planned, startOrder: position, conditional: conditions[HostKey(host: planned.host, route: planned.route)]))
        }
        #expect(results.map(Self.comparable) == expected.map(Self.comparable))
        #expect(results.map(\.code) == ["ok", "ok", "ok", "http-client-error", "ok", "http-redirect",
                                        "tls-expired", "ok", "invalid-json", "ok", "cdn-origin-failure", "ok"])
        #expect(windowed.requests.map(\.url).sorted() == alone.requests.map(\.url).sorted(), "the same requests, none twice")
    }

    /// Each route's requests go to that route's transport (`refresh` has a client of its own for
    /// the CDN, with one connection per host), in the window as in a lone fetch.
    @Test func theWindowSendsEachRouteThroughItsOwnTransport() async {
        let originTransport = ScriptedTransport()
        originTransport.on(Self.wellKnown, .json(Self.good))
        let cdnTransport = ScriptedTransport()
        cdnTransport.on(Self.cdnBase + Self.host, .json(Self.good))
        let fetcher = RouteFetcher(origin: AASAFetcher(transport: originTransport, options: Self.options),
                                   cdn: CDNFetcher(transport: cdnTransport, options: Self.options, base: Self.cdnBase))
        let results = await fetcher.fetchAll([PlannedFetch(host: Self.host, route: .origin, tier: 0, entryIndexes: []),
                                              PlannedFetch(host: Self.host, route: .cdn, tier: 0, entryIndexes: [])])
        #expect(results.map(\.code) == ["ok", "ok"])
        #expect(originTransport.requests.map(\.url) == [Self.wellKnown])
        #expect(cdnTransport.requests.map(\.url) == [Self.cdnBase + Self.host])
    }

    /// A transport whose transfers never finish until cancelled (the default ``HTTPTransferring/start(_:completion:)``
    /// runs each in a task, which ``HTTPTransferring/cancel(_:)`` cancels).
    final class HangingTransport: HTTPTransferring {
        let started = Mutex(0)

        func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
            started.withLock { $0 += 1 }
            try? await Task.sleep(for: .seconds(3600))
            throw TransferFailure(kind: .cancelled, message: "cancelled")
        }
    }

    /// Cancelling a run stops admissions, cancels every transfer under way and still hands each
    /// started host over (as `cancelled`) before the window returns.
    @Test func aCancelledWindowHandsOverEveryHostItStarted() async throws {
        let transport = HangingTransport()
        var options = Self.options
        options.concurrency = 4
        let fetcher = RouteFetcher(origin: AASAFetcher(transport: transport, options: options),
                                   cdn: CDNFetcher(transport: transport, options: options, base: Self.cdnBase))
        let fetches = (0..<100).map { PlannedFetch(host: "h\($0).test", route: .origin, tier: 0, entryIndexes: []) }
        let run = Task { await fetcher.fetchAll(fetches) }
        for _ in 0..<1000 where transport.started.withLock({ $0 }) < 8 {
            try await Task.sleep(for: .milliseconds(5))
        }
        run.cancel()
        let results = await run.value
        let started = transport.started.withLock { $0 }
        #expect(started == AASAFetcher.admissionLimit(concurrency: 4), "the window admits \(started), nothing after the cancel")
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.code == "cancelled" })
        #expect(results.prefix(started).allSatisfy { $0.attempts.map(\.code) == ["cancelled"] }, "the started hosts were handed over")
    }

    /// A transport that answers every request after a short pause and keeps the most requests
    /// it ever had under way at once. Until `holdUntil` requests have been under way at once
    /// (or 10 s went by), none is answered: whether the window ever has that many under way then
    /// does not depend on how fast a loaded machine runs the requests it started first.
    final class CountingTransport: HTTPTransferring {
        private let counts = Mutex((now: 0, most: 0, total: 0))
        private let holdUntil: Int

        init(holdUntil: Int = 0) {
            self.holdUntil = holdUntil
        }

        var most: Int { counts.withLock { $0.most } }
        var total: Int { counts.withLock { $0.total } }

        func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
            counts.withLock { counts in
                counts.now += 1
                counts.total += 1
                counts.most = max(counts.most, counts.now)
            }
            let held = ContinuousClock.now
            while most < holdUntil, ContinuousClock.now - held < .seconds(10) {
                try? await Task.sleep(for: .milliseconds(1))
            }
            try? await Task.sleep(for: .milliseconds(2))
            counts.withLock { $0.now -= 1 }
            return TransferResponse(status: 200, headers: [(name: "Content-Type", value: "application/json")],
                                    body: Array(RunLogicTests.good.utf8), url: request.url)
        }
    }

    /// Every CDN request rides on one HTTP/2 connection: however high the concurrency, the window
    /// has at most ``CDNFetcher/maxStreams`` CDN hosts (or `--route both` hosts) under way, and
    /// still fetches every host once; origin hosts are held to the concurrency alone.
    @Test(arguments: [false, true])
    func theWindowKeepsCDNHostsWithinOneConnectionsStreams(both: Bool) async {
        var options = Self.options
        options.concurrency = 400
        let count = 3 * CDNFetcher.maxStreams
        let cdnTransport = CountingTransport(holdUntil: CDNFetcher.maxStreams)
        let originTransport = CountingTransport()
        let fetcher = RouteFetcher(origin: AASAFetcher(transport: originTransport, options: options),
                                   cdn: CDNFetcher(transport: cdnTransport, options: options, base: Self.cdnBase))
        var handed: [Int] = []
        var position = 0
        await fetcher.fetchEach(next: { () -> RunFetch? in
            guard position < count else { return nil }
            defer { position += 1 }
            let host = "h\(position).test"
            return both
                ? RunFetch(planned: PlannedFetch(host: host, route: .origin, tier: 0, entryIndexes: []),
                           comparison: PlannedFetch(host: host, route: .cdn, tier: 0, entryIndexes: []))
                : RunFetch(planned: PlannedFetch(host: host, route: .cdn, tier: 0, entryIndexes: []))
        }, handle: { fetched in
            handed.append(fetched.result.startOrder)
        })
        #expect(handed.sorted() == Array(0..<count), "every host handed over once")
        #expect(cdnTransport.total == count)
        #expect(cdnTransport.most == CDNFetcher.maxStreams, "at most (and, with enough hosts, exactly) one connection's streams")

        let heldOrigin = CountingTransport(holdUntil: CDNFetcher.maxStreams + 1)
        let originOnly = RouteFetcher(origin: AASAFetcher(transport: heldOrigin, options: options),
                                      cdn: CDNFetcher(transport: cdnTransport, options: options, base: Self.cdnBase))
        let origin = await originOnly.fetchAll((0..<count).map { PlannedFetch(host: "o\($0).test", route: .origin, tier: 0, entryIndexes: []) })
        #expect(origin.count == count)
        #expect(heldOrigin.most > CDNFetcher.maxStreams, "the origin route is not held to the CDN's streams")
    }

    // MARK: - Which step the diagnosis blames

    static let address = "93.184.215.14"

    static func diagnose(
        _ entry: String = "applinks:example.com", transport: ScriptedTransport, probe: ScriptedNetworkProbe? = nil,
        route: RouteChoice = .origin, options: FetchOptions = options
    ) async -> Diagnosis {
        let parsed = EntryParser().parse([entry])[0]
        let diagnoser = Diagnoser(transport: transport, options: options, route: route, cdnBase: cdnBase,
                                  probe: probe ?? ScriptedNetworkProbe(addresses: [host: [address]]))
        return await diagnoser.diagnose(parsed, appIDs: [app])
    }

    static func blame(_ diagnosis: Diagnosis) -> String {
        "\(diagnosis.failedStep ?? "none") \(diagnosis.code)"
    }

    @Test func theDiagnosisBlamesTheStepThatFailed() async {
        let otherApp = RefreshPolicyTests.other
        let origin: [(String, ScriptedTransport.Answer, String)] = [
            ("redirect", .status(301, headers: [("Location", "https://www.example.com/")]), "http http-redirect"),
            ("not found", .status(404), "http http-client-error"),
            ("server error", .status(503), "http http-server-error"),
            ("reset mid-body", .fail(.transferFailure, "Recv failure: Connection reset by peer", reached: .secured), "http transfer-failure"),
            ("stall after headers", .fail(.timeout, "Operation timed out after 2001 milliseconds with 10 out of 1000 bytes received", reached: .secured),
             "http timeout"),
            ("handshake timeout", .fail(.timeout, "Connection timed out after 1001 milliseconds", reached: .connected), "tls timeout"),
            ("handshake broken", .fail(.transferFailure, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL", reached: .connected), "tls transfer-failure"),
            ("too large", .fail(.tooLarge), "http too-large"),
            ("HTML", .status(200, headers: [("Content-Type", "text/html")], body: "<!DOCTYPE html><html></html>"), "json invalid-json"),
            ("not a file", .json(#"{"hello":"world"}"#), "structure not-an-association-file"),
            ("another app", .json(otherApp), "association app-not-listed"),
            ("approved", .json(Self.good), "none ok"),
        ]
        for (name, answer, expected) in origin {
            let transport = ScriptedTransport(fallback: .json(Self.good))
            transport.on(Self.wellKnown, answer)
            transport.on(Self.legacy, .status(404))
            let diagnosis = await Self.diagnose(transport: transport)
            #expect(Self.blame(diagnosis) == expected, "\(name): \(diagnosis.steps.map { "\($0.step):\($0.status.rawValue):\($0.code)" })")
        }
    }

    /// Addresses that never answer, each waiting as long as it is given; the timeouts asked for.
    final class SilentAddresses: NetworkProbing, @unchecked Sendable {
        let addresses: [String]
        private let lock = NSLock()
        private var asked: [Double] = []
        init(_ count: Int) { addresses = (1...count).map { "93.184.216.\($0)" } }
        var timeouts: [Double] { lock.withLock { asked } }
        func resolve(_ host: String, timeout: Double) async -> Result<[String], NetworkProbeError> { .success(addresses) }
        func connect(address: String, port: Int, timeout: Double) async -> NetworkConnectOutcome {
            lock.withLock { asked.append(timeout) }
            // The whole timeout (whole milliseconds made a share under 1 ms no wait at all, and
            // the step then tried every address in the last fraction of a millisecond).
            try? await Task.sleep(for: .nanoseconds(Int(timeout * 1_000_000_000)))
            return .timedOut
        }
    }

    /// `diagnose`'s TCP step spends --connect-timeout over every address together, as libcurl's
    /// connect does (each address had the whole timeout: 100 silent addresses took 100 times it),
    /// and names the addresses it had no time left for.
    @Test func theTCPStepSpendsTheConnectTimeoutOnce() async {
        var options = Self.options
        options.connectTimeout = 0.6
        let probe = SilentAddresses(40)
        let diagnoser = Diagnoser(transport: ScriptedTransport(), options: options, route: .origin, cdnBase: Self.cdnBase, probe: probe)
        let diagnosis = await diagnoser.diagnose(EntryParser().parse(["applinks:example.com"])[0], appIDs: [Self.app])
        #expect(Self.blame(diagnosis) == "tcp timeout")
        #expect(probe.timeouts.reduce(0, +) <= 0.6 + 1e-9, "\(probe.timeouts)")
        #expect(probe.timeouts.count < 40)
        let tcp = diagnosis.steps.first { $0.step == "tcp" }
        #expect(tcp?.details.last?.contains("not tried: the --connect-timeout of 0.6 s was spent") == true, "\(tcp?.details ?? [])")
    }

    @Test func theDiagnosisBlamesNameResolutionConnectAndTLS() async {
        let good = ScriptedTransport()
        good.on(Self.wellKnown, .json(Self.good))
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe())) == "dns dns-failure")
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe(addresses: [Self.host: ["10.0.0.7"]])))
                == "dns private-address")
        // A ?mode= entry is fetched by the device itself: not "Apple's CDN refuses them", not
        // "use ?mode=developer".
        let direct = await Self.diagnose("applinks:example.com?mode=developer", transport: good,
                                         probe: ScriptedNetworkProbe(addresses: [Self.host: ["10.0.0.7"]]))
        #expect(Self.blame(direct) == "dns private-address")
        let dns: DiagnosisStep? = direct.steps.first { $0.step == "dns" }
        let summary: String = dns?.summary ?? ""
        let fix: String = dns?.fix ?? ""
        #expect(summary.contains("a device fetches this ?mode= entry itself") && !summary.contains("CDN"), "\(summary)")
        #expect(fix.contains("--allow-private") && !fix.contains("?mode="), "\(fix)")
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe(
            addresses: [Self.host: [Self.address]], connects: [Self.address: .failed("Connection refused")]))) == "tcp connect-failure")
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe(
            addresses: [Self.host: [Self.address]], connects: [Self.address: .timedOut]))) == "tcp timeout")
        // No descriptor left for the resolver or the socket is the run's shortage (exit 2 in the
        // CLI), not the host's dns-failure or connect-failure.
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe(resolverShortOfDescriptors: true))) == "dns descriptors-exhausted")
        #expect(Self.blame(await Self.diagnose(transport: good, probe: ScriptedNetworkProbe(
            addresses: [Self.host: [Self.address]], connects: [Self.address: .descriptorsExhausted("Too many open files")]))) == "tcp descriptors-exhausted")
        #expect(HostFetchResult.shortageCodes.contains("descriptors-exhausted"))
        #expect(good.requests.isEmpty, "nothing is downloaded before DNS and TCP pass")

        // A certificate that does not name the host: the unverified second look says so.
        let leaf = PeerCertificate(subject: "CN=other.example", issuer: "CN=Test CA", notBefore: "Jan  1 00:00:00 2020 GMT",
                                   notAfter: "Jan  1 00:00:00 2099 GMT", subjectAltNames: ["other.example"])
        let wrongName = ScriptedTransport()
        wrongName.on(Self.wellKnown, when: { !$0.verifyPeer },
                     .response(TransferResponse(status: 200, headers: [], body: Array(Self.good.utf8), url: "", certificates: [leaf])))
        wrongName.on(Self.wellKnown, .fail(.tlsHostnameMismatch, "SSL: no alternative certificate subject name matches"))
        let mismatch = await Self.diagnose(transport: wrongName)
        #expect(Self.blame(mismatch) == "tls tls-hostname-mismatch")
        #expect(wrongName.requests.contains { !$0.verifyPeer }, "the certificate was fetched unverified, only to show it")

        // Developer mode accepts an untrusted but otherwise valid certificate (a warning).
        let selfSigned = PeerCertificate(subject: "CN=example.com", issuer: "CN=example.com", notBefore: "Jan  1 00:00:00 2020 GMT",
                                         notAfter: "Jan  1 00:00:00 2099 GMT", subjectAltNames: ["example.com"])
        let untrusted = ScriptedTransport()
        untrusted.on(Self.wellKnown, when: { !$0.verifyPeer },
                     .response(TransferResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(Self.good.utf8),
                                                url: "", certificates: [selfSigned])))
        untrusted.on(Self.wellKnown, .fail(.tlsUntrusted, "self-signed certificate"))
        #expect(Self.blame(await Self.diagnose(transport: untrusted)) == "tls tls-untrusted")
        let developer = await Self.diagnose("applinks:example.com?mode=developer", transport: untrusted)
        #expect(Self.blame(developer) == "none ok")
        #expect(developer.steps.contains { $0.step == "tls" && $0.status == .warned && $0.code == "tls-untrusted" })
    }

    /// A timeout or a break is the step of how far the transfer got (libcurl's timings), and a
    /// handshake is said to have completed only when one was timed. Regression: a lookup that
    /// timed out ("Resolving timed out") was an HTTP timeout after "the handshake completed".
    @Test(arguments: [
        (TransferFailureKind.timeout, "Resolving timed out after 2000 milliseconds", TransferPhase.nothing, "dns", false),
        (.timeout, "Failed to connect to example.com port 443 after 5000 ms: Timeout was reached", .nothing, "tcp", false),
        (.timeout, "Operation timed out after 5000 milliseconds", .connected, "tls", false),
        (.timeout, "Operation timed out after 10000 milliseconds with 0 bytes received", .secured, "http", true),
        (.transferFailure, "Connection reset by peer", .connected, "tls", false),
        (.transferFailure, "Connection reset by peer", .secured, "http", true),
    ])
    func aFailureBelongsToThePhaseItCameIn(kind: TransferFailureKind, message: String, reached: TransferPhase, step: String, handshake: Bool) async {
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .fail(kind, message, reached: reached))
        let diagnosis = await Self.diagnose(transport: transport)
        #expect(Self.blame(diagnosis) == "\(step) \(kind.rawValue)", "\(diagnosis.steps.map { "\($0.step) \($0.status)" })")
        #expect(diagnosis.steps.contains { $0.step == "tls" && $0.status == .passed } == handshake)
    }

    /// A failure after a whole header block keeps the status, but the step's detail names the
    /// failure first: it read "HTTP 200" under a too-large failure.
    @Test func aFailureAfterAnAnswerIsNotShownAsTheAnswer() async {
        let transport = ScriptedTransport()
        transport.on(Self.wellKnown, .fail(.tooLarge, "the answer announces 999999999 bytes", reached: .secured, afterStatus: 200))
        let diagnosis = await Self.diagnose(transport: transport)
        #expect(Self.blame(diagnosis) == "http too-large")
        let details = diagnosis.steps.first { $0.step == "http" }?.details ?? []
        #expect(details.contains { $0.hasSuffix("apple-app-site-association: too-large (after HTTP 200) in 0 ms") || $0.contains(": too-large (after HTTP 200) in ") }, "\(details)")
        #expect(!details.contains { $0.contains(": HTTP 200 in ") }, "\(details)")
    }

    @Test func theDiagnosisBlamesTheUserAgentAndTheCDN() async {
        // The origin refuses only Apple's crawler: the http step's code becomes user-agent-blocked.
        let botBlock = ScriptedTransport()
        botBlock.on(Self.wellKnown, when: { $0.userAgent == "AASA-Bot/1.0.0" }, .status(403))
        botBlock.on(Self.wellKnown, .json(Self.good))
        let blocked = await Self.diagnose(transport: botBlock)
        #expect(Self.blame(blocked) == "http user-agent-blocked")
        #expect(blocked.userAgents.map(\.httpStatus) == [403, 200, 200])

        // --route cdn: the CDN's failure is the cdn step's; SWCERR00101 sends the user-agent check to the origin.
        let cdn = ScriptedTransport()
        cdn.on(Self.cdnBase + Self.host, .status(404, headers: [("Apple-Failure-Reason", "SWCERR00101 Bad HTTP Response: 403 Forbidden")]))
        cdn.on(Self.wellKnown, when: { $0.userAgent == "AASA-Bot/1.0.0" }, .status(403))
        cdn.on(Self.wellKnown, .json(Self.good))
        let viaCDN = await Self.diagnose(transport: cdn, route: .cdn)
        #expect(Self.blame(viaCDN) == "cdn cdn-origin-failure")
        #expect(viaCDN.steps.contains { $0.step == "user-agent" && $0.code == "user-agent-blocked" })
        #expect(!viaCDN.steps.contains { $0.step == "dns" }, "the CDN route does not resolve the origin")

        // --route both with a CDN copy that no longer lists the app: cdn-stale blocks.
        let stale = ScriptedTransport()
        stale.on(Self.wellKnown, .json(Self.good))
        stale.on(Self.cdnBase + Self.host, .json(RefreshPolicyTests.other))
        #expect(Self.blame(await Self.diagnose(transport: stale, route: .both)) == "cdn cdn-stale")
    }
}

