@testable import AASAFetchCore
import Testing

/// The route rule (``RouteChoice/downloads(servesPlain:servesModes:)``), written out case by case,
/// and the plan split and need scopes that follow it.
struct RouteRuleTests {
    static func rule(_ choice: RouteChoice, plain: Bool, moded: Bool) -> [String] {
        choice.downloads(servesPlain: plain, servesModes: moded).map {
            "\($0.route.rawValue) \($0.entries.rawValue)" + ($0.comparedWithCDN ? " +cdn" : "")
        }
    }

    @Test func eachRouteDownloadsAsTheDocsSay() {
        // origin: one download from the origin, for every entry.
        #expect(Self.rule(.origin, plain: true, moded: false) == ["origin all"])
        #expect(Self.rule(.origin, plain: true, moded: true) == ["origin all"])
        #expect(Self.rule(.origin, plain: false, moded: true) == ["origin all"])
        // cdn: plain entries through the CDN, then `?mode=` entries from the origin.
        #expect(Self.rule(.cdn, plain: true, moded: false) == ["cdn plain"])
        #expect(Self.rule(.cdn, plain: true, moded: true) == ["cdn plain", "origin moded"])
        #expect(Self.rule(.cdn, plain: false, moded: true) == ["origin moded"])
        // both: the origin decides; the CDN's answer alongside when there are plain entries.
        #expect(Self.rule(.both, plain: true, moded: false) == ["origin all +cdn"])
        #expect(Self.rule(.both, plain: true, moded: true) == ["origin all +cdn"])
        #expect(Self.rule(.both, plain: false, moded: true) == ["origin all"])
    }

    @Test func needScopesAreWhereEachRouteRecords() {
        func scopes(_ choice: RouteChoice) -> [String] { choice.needScopes.map { "\($0.route.rawValue) \($0.entries.rawValue)" } }
        #expect(scopes(.origin) == ["origin all"])
        #expect(scopes(.cdn) == ["cdn plain", "origin moded"])
        #expect(scopes(.both) == ["origin all"])
    }

    @Test func thePlanIsSplitByTheRule() {
        let entries = EntryParser().parse(["applinks:a.example", "applinks:a.example?mode=developer", "webcredentials:b.example",
                                           "applinks:c.example?mode=managed"])
        let plan = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: nil))
        func fetches(_ choice: RouteChoice) -> (plan: [String], comparison: [String]) {
            let (routed, comparison) = RoutedRun.split(plan, route: choice)
            let show = { (fetch: PlannedFetch) in "\(fetch.host) \(fetch.route.rawValue) \(fetch.entryIndexes)" }
            return (routed.fetches.map(show), comparison.map(show))
        }
        #expect(fetches(.origin).plan == ["a.example origin [0, 1]", "b.example origin [2]", "c.example origin [3]"])
        #expect(fetches(.origin).comparison.isEmpty)
        #expect(fetches(.cdn).plan == ["a.example cdn [0]", "a.example origin [1]", "b.example cdn [2]", "c.example origin [3]"])
        #expect(fetches(.cdn).comparison.isEmpty)
        #expect(fetches(.both).plan == fetches(.origin).plan)
        #expect(fetches(.both).comparison == ["a.example cdn [0]", "b.example cdn [2]"])
    }
}

/// `--route both`: a CDN copy that cannot be used is a `cdn-…` warning, as every CDN warning is,
/// with the fix of the finding that decided it.
struct RoutedComparisonTests {
    @Test func anUnusableCDNCopyIsACDNWarning() {
        let origin = HostFetchResult(host: "example.com", route: .origin, url: "https://example.com/.well-known/apple-app-site-association",
                                     code: "ok", reason: "HTTP 200")
        var cdn = HostFetchResult(host: "example.com", route: .cdn, url: "https://cdn.test/a/v1/example.com", code: "invalid-json",
                                  reason: "not JSON at line 1")
        cdn.findings = [.error("wrong-type", "a lint finding", fix: "not this fix"), .error("invalid-json", "not JSON", fix: "fix the JSON syntax")]
        let (changes, findings) = RoutedRun.compare(origin: origin, originAssociated: true, cdn: cdn, cdnAssociated: false)
        #expect(changes == nil)
        #expect(findings.map(\.code) == ["cdn-stale"], "\(findings)")
        #expect(findings.first?.severity == .warning)
        #expect(findings.first?.message.contains("invalid-json") == true)
        #expect(findings.first?.fix == "fix the JSON syntax")
        // A CDN code stays as it is.
        cdn.code = "cdn-unreachable"
        cdn.findings = [.error("cdn-unreachable", "no answer", fix: "check the network path")]
        #expect(RoutedRun.compare(origin: origin, originAssociated: true, cdn: cdn, cdnAssociated: nil).findings.map(\.code) == ["cdn-unreachable"])
    }

    /// A copy the CDN serves and caches (a 200 that is no usable file) says how old it is and
    /// how long it stays, as every other `cdn-stale` does.
    @Test func anUnusableCDNCopyGivesTheCDNsCacheHeaders() {
        let origin = HostFetchResult(host: "example.com", route: .origin, url: "https://example.com/.well-known/apple-app-site-association",
                                     code: "ok", reason: "HTTP 200")
        var cdn = HostFetchResult(host: "example.com", route: .cdn, url: "https://cdn.test/a/v1/example.com", code: "invalid-json",
                                  reason: "the body is not valid JSON", httpStatus: 200)
        var headers = CDNHeaders(httpStatus: 200)
        headers.age = 77
        headers.cacheControl = "max-age=21600"
        cdn.cdn = headers
        let message = RoutedRun.compare(origin: origin, originAssociated: true, cdn: cdn, cdnAssociated: false).findings.first?.message
        #expect(message?.hasSuffix("; Age 77 s, Cache-Control max-age=21600") == true, "\(message ?? "")")
    }

    /// Keys devices ignore (`"comment"`) are no difference between the CDN's copy and the origin's.
    @Test func anIgnoredTopLevelKeyIsNoDifference() throws {
        let file = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/buy/*"}]}]}}"#
        let commented = #"{"comment":"deployed 2024-05-01","applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/buy/*"}]}]}}"#
        let plain = try #require(AASADecoder.decode(Array(file.utf8)).document)
        let withComment = try #require(AASADecoder.decode(Array(commented.utf8)).document)
        #expect(AASADiff.changes(from: withComment, to: plain).isEmpty)
        #expect(AASADiff.changes(from: plain, to: withComment).isEmpty)
    }
}
