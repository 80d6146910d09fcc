import AASAFetchCore
import Foundation
import Testing

/// The refresh policy with an injected clock: every time is derived from `t0`.
struct RefreshPolicyTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let app = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
    static let narrowed = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/shop/*"}]}]}}"#
    static let other = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]}}"#
    let policy = RefreshPolicy()

    static func approved(_ json: String, headers: [HTTPHeader] = [], status: Int = 200) -> HostFetchResult {
        let body = Array(json.utf8)
        guard case .document(let document, _) = AASADecoder.decode(body) else { fatalError("fixture does not decode") }
        return HostFetchResult(host: "example.com", route: .origin, url: "https://example.com/.well-known/apple-app-site-association",
                               code: "ok", reason: "HTTP \(status)", httpStatus: status, document: document, body: body, headers: headers)
    }

    static func failure(_ code: String, status: Int? = nil) -> HostFetchResult {
        HostFetchResult(host: "example.com", route: .origin, url: "https://example.com/.well-known/apple-app-site-association",
                        code: code, reason: code, httpStatus: status)
    }

    static func state(approved json: String?, lastCode: String? = "ok", failures: Int = 0, validators: CacheValidators = CacheValidators()) -> HostState {
        HostState(
            key: HostKey(host: "example.com"), tier: 0,
            lastResult: lastCode.map { StoredResult(code: $0, reason: $0, httpStatus: 200, url: "", headers: [], body: nil, fetchedAt: t0) },
            approvedBody: json.map { Array($0.utf8) }, approvedAt: json == nil ? nil : t0, validators: validators,
            consecutiveFailures: failures, nextCheck: t0, addedAt: t0
        )
    }

    static let needs = [EntryNeed(entry: "applinks:example.com", service: .applinks, host: "example.com", appID: app)]

    @Test(arguments: [
        (nil, 86400),
        ("max-age=60", 3600),
        ("max-age=7200", 7200),
        ("public, max-age=\"600\"", 3600),
        ("max-age=99999999", 7 * 86400),
        ("no-cache", 86400),
        ("max-age=604800", 604800),
        // Too many digits for an integer is the largest age, not absent (it gave 24 h).
        ("max-age=99999999999999999999", 7 * 86400),
        ("max-age=-5", 86400),
        ("max-age=+5", 86400),
    ] as [(String?, Double)])
    func approvedLifetimeIsMaxAgeBounded(cacheControl: String?, expected: Double) throws {
        let headers = cacheControl.map { [HTTPHeader(name: "Cache-Control", value: $0)] } ?? []
        let update = try #require(policy.update(for: Self.approved(Self.good, headers: headers), previous: nil, needs: [], now: Self.t0))
        #expect(update.outcome == .approved)
        #expect(update.nextCheck == Self.t0.addingTimeInterval(expected))
        #expect(update.consecutiveFailures == 0)
    }

    /// Several `Cache-Control` lines are one list: a `max-age` on the second line counted as absent.
    @Test func cacheControlLinesAreJoined() throws {
        let headers = [HTTPHeader(name: "Cache-Control", value: "public"), HTTPHeader(name: "cache-control", value: "max-age=7200")]
        let update = try #require(policy.update(for: Self.approved(Self.good, headers: headers), previous: nil, needs: [], now: Self.t0))
        #expect(update.nextCheck == Self.t0.addingTimeInterval(7200))
    }

    @Test func transientFailuresRetryEveryThreeHoursEightTimesThenDaily() throws {
        var previous = Self.state(approved: Self.good)
        var delays: [Double] = []
        var now = Self.t0
        for _ in 1...10 {
            let update = try #require(policy.update(for: Self.failure("timeout"), previous: previous, needs: [], now: now))
            #expect(update.outcome == .transient)
            #expect(update.approvedBody == nil, "a failure never replaces the approved body")
            delays.append(update.nextCheck.timeIntervalSince(now))
            previous.consecutiveFailures = update.consecutiveFailures
            previous.lastResult = update.result
            now = update.nextCheck
        }
        #expect(delays == Array(repeating: 3 * 3600, count: 8) + [86400, 86400])
    }

    @Test(arguments: [("http-server-error", 503), ("http-client-error", 429), ("connect-failure", nil), ("dns-failure", nil), ("transfer-failure", nil)] as [(String, Int?)])
    func transientCodes(code: String, status: Int?) {
        #expect(policy.classify(Self.failure(code, status: status)) == .transient)
    }

    @Test(arguments: ["http-redirect", "http-client-error", "tls-untrusted", "invalid-json", "too-large", "not-an-association-file"])
    func deniedWaitsADay(code: String) throws {
        let update = try #require(policy.update(for: Self.failure(code, status: code == "http-client-error" ? 404 : nil),
                                                previous: Self.state(approved: nil, lastCode: nil), needs: [], now: Self.t0))
        #expect(update.outcome == .denied)
        #expect(update.nextCheck == Self.t0.addingTimeInterval(86400))
        #expect(update.events.map(\.kind) == [.failed])
    }

    /// A next check is a whole second, rounded up: it is shown in whole seconds (`10:01:00Z`), and
    /// `refresh --now 10:01:00Z` must find it due. Regression: kept as 10:01:00.749, shown as
    /// 10:01:00Z, and not due then.
    @Test func nextChecksAreWholeSecondsRoundedUp() throws {
        let now = Self.t0.addingTimeInterval(0.749)
        let failed = try #require(policy.update(for: Self.failure("http-client-error", status: 404),
                                                previous: Self.state(approved: nil, lastCode: nil), needs: [], now: now))
        #expect(failed.nextCheck == Self.t0.addingTimeInterval(86401))
        let approved = try #require(policy.update(for: Self.approved(Self.good, status: 200), previous: nil, needs: Self.needs, now: now))
        #expect(approved.nextCheck == Self.t0.addingTimeInterval(86401))
        #expect(Timestamp.string(approved.nextCheck) == Timestamp.string(Self.t0.addingTimeInterval(86401)))
        let exact = try #require(policy.update(for: Self.approved(Self.good, status: 200), previous: nil, needs: Self.needs, now: Self.t0))
        #expect(exact.nextCheck == Self.t0.addingTimeInterval(86400))
    }

    @Test func notModifiedKeepsTheStoredBodyAndCountsAsApproved() throws {
        let validators = CacheValidators(etag: "\"abc\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        let previous = Self.state(approved: Self.good, lastCode: "timeout", failures: 3, validators: validators)
        let update = try #require(policy.update(for: Self.approved(Self.good, status: 304), previous: previous, needs: Self.needs, now: Self.t0))
        #expect(update.outcome == .notModified)
        #expect(update.approvedBody == Array(Self.good.utf8))
        #expect(update.consecutiveFailures == 0)
        #expect(update.validators == validators, "a 304 without validators keeps the stored ones")
        #expect(update.nextCheck == Self.t0.addingTimeInterval(86400))
        #expect(update.events.map(\.kind) == [.approved], "recovering from failures is recorded, nothing else changed")
    }

    @Test func approvedToFailingBreaksAndKeepsTheLastGoodFile() throws {
        let update = try #require(policy.update(for: Self.failure("http-server-error", status: 500), previous: Self.state(approved: Self.good),
                                                needs: Self.needs, now: Self.t0))
        #expect(update.approvedBody == nil && update.validators == nil, "nil means: keep what is stored")
        #expect(update.events.map(\.kind) == [.broke])
        #expect(update.events.allSatisfy { $0.kind.isBreaking })
        #expect(update.consecutiveFailures == 1)
    }

    @Test func aFailureThatStaysTheSameIsNotAChange() throws {
        let update = try #require(policy.update(for: Self.failure("timeout"), previous: Self.state(approved: nil, lastCode: "timeout", failures: 2),
                                                needs: [], now: Self.t0))
        #expect(update.events.isEmpty)
        #expect(update.consecutiveFailures == 3)
    }

    @Test func changedFileIsDiffedAndALostAppBreaks() throws {
        let narrowedUpdate = try #require(policy.update(for: Self.approved(Self.narrowed), previous: Self.state(approved: Self.good),
                                                        needs: Self.needs, now: Self.t0))
        #expect(narrowedUpdate.events.map(\.kind) == [.changed])
        #expect(narrowedUpdate.events.first?.detail.changes?.map(\.kind) == ["rules-changed"])
        #expect(!narrowedUpdate.events.contains { $0.kind.isBreaking })

        let lost = try #require(policy.update(for: Self.approved(Self.other), previous: Self.state(approved: Self.good),
                                              needs: Self.needs, now: Self.t0))
        #expect(lost.events.map(\.kind) == [.changed, .associationLost])
        #expect(lost.events.last?.detail.appID == Self.app)
        #expect(lost.events.contains { $0.kind.isBreaking })
    }

    @Test func sameMeaningIsNoChange() throws {
        let reformatted = Self.good.replacingOccurrences(of: ",", with: " ,\n ")
        let update = try #require(policy.update(for: Self.approved(reformatted), previous: Self.state(approved: Self.good), needs: Self.needs, now: Self.t0))
        #expect(update.events.isEmpty)
        #expect(update.approvedBody == Array(reformatted.utf8))
    }

    @Test func cancelledDownloadsAreNotRecorded() {
        #expect(policy.update(for: Self.failure("cancelled"), previous: nil, needs: [], now: Self.t0) == nil)
    }

    @Test func validatorsComeFromTheApprovedResponse() throws {
        let headers = [HTTPHeader(name: "ETag", value: "\"v1\""), HTTPHeader(name: "Last-Modified", value: "Tue, 02 Jan 2024 00:00:00 GMT")]
        let update = try #require(policy.update(for: Self.approved(Self.good, headers: headers), previous: nil, needs: [], now: Self.t0))
        #expect(update.validators == CacheValidators(etag: "\"v1\"", lastModified: "Tue, 02 Jan 2024 00:00:00 GMT"))
        #expect(update.events.map(\.kind) == [.approved])
    }
}
