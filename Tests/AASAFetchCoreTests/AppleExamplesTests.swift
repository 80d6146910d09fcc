import AASAFetchCore
import Testing

/// Apple's documented matching examples.
struct AppleExamplesTests {
    typealias Row = (name: String, json: String, url: String, app: String, expected: MatchDecision)

    static let overview = MatcherFixture.components(##"""
    [{"#":"no_universal_links","exclude":true},{"/":"/buy/*"},{"/":"/help/website/*","exclude":true},
     {"/":"/help/*","?":{"articleNumber":"????"}}]
    """##)
    static let docComponents = MatcherFixture.components(##"[{"/":"abc","?":"def","#":"*"}]"##)
    static let caseDetail = ##"""
    {"applinks":{"details":[{"appIDs":["HOGE123456.com.example.app"],"defaults":{"caseSensitive":false},
     "components":[{"/":"/buy/*","#":"my_great_product_123"}]}]}}
    """##
    static let food = MatcherFixture.components(
        ##"[{"/":"/$(lang)_$(region)/$(food)/"}]"##,
        extraApplinks: #""substitutionVariables":{"food":["burrito","pizza","sushi","samosa"]},"#
    )
    static let tn3155 = MatcherFixture.components(##"[{"/":"/test/*"},{"/":"/path/1/*","exclude":true}]"##)
    static let wwdcLegacy = ##"""
    {"applinks":{"apps":[],"details":[{"appID":"9JA89QQLNQ.com.apple.wwdc","paths":["/wwdc/news/","/videos/wwdc/2015/*"]},
     {"appID":"ABCD1234.com.apple.wwdc","paths":["*"]}]}}
    """##
    static let notPaths = ##"""
    {"applinks":{"apps":[],"details":[{"appID":"HOGE123456.com.example.app",
     "paths":["/wwdc/news/","NOT /videos/wwdc/2010/*","/videos/wwdc/201?/*"]}]}}
    """##
    static let deepPaths = ##"{"applinks":{"details":[{"appID":"HOGE123456.com.example.app","paths":["/foo/*/bar/201?/mypage"]}]}}"##
    static let both = ##"""
    {"applinks":{"details":[{"appIDs":["HOGE123456.com.example.app"],"paths":["/only-in-paths"],"components":[{"/":"/x"}]}]}}
    """##
    static let taco = MatcherFixture.components(##"[{"/":"/taco/*","?":{"cheese":"?*"}}]"##)
    static let coupon = MatcherFixture.components(##"[{"#":"coupon-1???","exclude":true},{"/":"","#":"coupon-????"}]"##)
    static let restaurant = MatcherFixture.components(
        ##"""
        [{"/":"/$(lang)_CA/$(Canadian food)/","percentEncoded":false},{"/":"/$(lang)_CA/$(food)/","exclude":true},
         {"/":"/$(lang)_$(region)/$(food)/"}]
        """##,
        extraApplinks: ##"""
        "substitutionVariables":{"food":["burrito","shawarma","sushi","curry-pad-thai"],
         "Canadian food":["burrito","poutine","tête-de-violon"]},
        """##
    )
    static let app = MatcherFixture.app

    static let rows: [Row] = [
        // §6.1 Apple documentation examples.
        ("A1", docComponents, "https://www.example.com/abc?def", app, .match),
        ("A2", docComponents, "https://www.example.com/abc", app, .noMatch),
        ("A3", docComponents, "https://www.example.com?def", app, .noMatch),
        ("A4", MatcherFixture.components(##"[{"/":"/help/website/*","exclude":true}]"##), "https://example.com/help/website/faq", app, .exclude),
        ("A5", overview, "https://example.com/buy/shoes", app, .match),
        ("A6", overview, "https://example.com/buy/shoes#no_universal_links", app, .exclude),
        ("A7", overview, "https://example.com/help/website/x", app, .exclude),
        ("A8", overview, "https://example.com/help/x?articleNumber=1234", app, .match),
        ("A9", overview, "https://example.com/help/x?articleNumber=123", app, .noMatch),
        ("A10", overview, "https://example.com/help/x", app, .noMatch),
        ("A11", overview, "https://example.com/help/x?articleNumber=1234&articleNumber=12", app, .noMatch),
        ("A12", overview, "https://example.com/other", app, .noMatch),
        ("A13", caseDetail, "https://example.com/BUY/x#MY_GREAT_PRODUCT_123", app, .match),
        ("A14", caseDetail, "https://example.com/buy/x", app, .noMatch),
        ("A15", MatcherFixture.components(##"[{"?":{"productID":"12345"}}]"##), "https://example.com/p?productID=12345", app, .match),
        ("A16", MatcherFixture.components(##"[{"?":{"productID":"12345"}}]"##), "https://example.com/p?productID=123456", app, .noMatch),
        ("A17", food, "https://example.com/en_US/pizza/", app, .match),
        ("A18", food, "https://example.com/en_US/tacos/", app, .noMatch),
        ("A19", food, "https://example.com/en_US/Pizza/", app, .noMatch),
        ("A20", tn3155, "https://example.com/test", app, .match),
        ("A21", tn3155, "https://example.com/path/1", app, .exclude),
        // A22 (same-domain navigation stays in Safari) is browser behaviour, not file matching.
        // §6.2 legacy paths.
        ("L1", wwdcLegacy, "https://example.com/wwdc/news/", "9JA89QQLNQ.com.apple.wwdc", .match),
        ("L1b", wwdcLegacy, "https://example.com/wwdc/news/", "ABCD1234.com.apple.wwdc", .match),
        ("L2", wwdcLegacy, "https://example.com/videos/wwdc/2015/123", "9JA89QQLNQ.com.apple.wwdc", .match),
        ("L3", wwdcLegacy, "https://example.com/anything", "ABCD1234.com.apple.wwdc", .match),
        ("L3b", wwdcLegacy, "https://example.com/anything", "9JA89QQLNQ.com.apple.wwdc", .noMatch),
        ("L4", notPaths, "https://example.com/videos/wwdc/2010/x", app, .exclude),
        ("L5", notPaths, "https://example.com/videos/wwdc/2014/x", app, .match),
        ("L6", notPaths, "https://example.com/videos/wwdc/2009/x", app, .noMatch),
        ("L7", notPaths, "https://example.com/wwdc/news/?q=1#f", app, .match),
        ("L8", notPaths, "https://example.com/WWDC/news/", app, .noMatch),
        // L9: the constructed expectation is no_match; legacy paths share the
        // component path engine, whose trailing slash swcutil ignores (oracle cases), so: match.
        ("L9", notPaths, "https://example.com/wwdc/news", app, .match),
        ("L10", deepPaths, "https://example.com/foo/a/b/bar/2016/mypage", app, .match),
        ("L11", deepPaths, "https://example.com/foo/a/bar/20166/mypage", app, .noMatch),
        ("L12", both, "https://example.com/only-in-paths", app, .noMatch),
        ("L12b", both, "https://example.com/x", app, .match),
        // §6.3 WWDC examples.
        ("W1", MatcherFixture.components(##"[{"/":"/*/order/"}]"##), "https://example.com/lunch/order/", app, .match),
        ("W2", taco, "https://example.com/taco/chicken?cheese=cheddar", app, .match),
        ("W3", taco, "https://example.com/taco/chicken?cheese=", app, .noMatch),
        ("W4", taco, "https://example.com/taco/chicken", app, .noMatch),
        ("W5", coupon, "https://example.com#coupon-1234", app, .exclude),
        ("W6", coupon, "https://example.com#coupon-4567", app, .match),
        ("W7", MatcherFixture.components(##"[{"/":"/??_??/*"}]"##), "https://example.com/fr_CA/menu", app, .match),
        ("W8", MatcherFixture.components(##"[{"/":"/sourdough/?*","caseSensitive":false}]"##), "https://example.com/SourDough/rye", app, .match),
        ("W9", MatcherFixture.components(##"[{"/":"/sourdough/?*","caseSensitive":false}]"##), "https://example.com/sourdough/", app, .noMatch),
        ("W10", MatcherFixture.components(##"[{"/":"/中國哲學書電子化計劃/?*","percentEncoded":false}]"##),
         "https://example.com/%E4%B8%AD%E5%9C%8B%E5%93%B2%E5%AD%B8%E6%9B%B8%E9%9B%BB%E5%AD%90%E5%8C%96%E8%A8%88%E5%8A%83/x", app, .match),
        ("W11", restaurant, "https://example.com/fr_CA/sushi/", app, .exclude),
        ("W12", restaurant, "https://example.com/en_US/sushi/", app, .match),
        ("W13", restaurant, "https://example.com/fr_CA/poutine/", app, .match),
        ("W13b", restaurant, "https://example.com/fr_CA/t%C3%AAte-de-violon/", app, .match),
        // §6.4 swcutil observations.
        ("E3", MatcherFixture.components("[]"), "https://example.com/", app, .noMatch),
        ("E4", MatcherFixture.components(##"[{"/":"/search/"}]"##), "https://example.com/search/", app, .match),
        ("E5", MatcherFixture.components(##"[{"#":"nondeeplinking","exclude":true},{"/":"/search/"}]"##),
         "https://example.com/search/#nondeeplinking", app, .exclude),
        ("E6", MatcherFixture.components(##"[{"/":"/search/"}]"##), "https://example.com/SEARCH/", app, .noMatch),
        ("E7", MatcherFixture.components(##"[{"/":"/search/","caseSensitive":false}]"##), "https://example.com/SEARCH/", app, .match),
        ("E8", MatcherFixture.components(##"[{"/":"/search/"}]"##), "https://example.com/search/?q=foo#bar", app, .match),
        ("E9", MatcherFixture.components(##"[{"?":"key=value"}]"##), "https://example.com/?key=value", app, .match),
        ("E10", MatcherFixture.components(##"[{"?":"key=value"}]"##), "https://example.com/?key=value&extra=value", app, .noMatch),
        ("E11", MatcherFixture.components(##"[{"?":{"key":"value"}}]"##), "https://example.com/?key=value", app, .match),
        ("E12", MatcherFixture.components(##"[{"?":{"key":"value"}}]"##), "https://example.com/?key=value&extra=value", app, .match),
        ("E13", ##"{"applinks":{"details":[{"components":[{"/":"/search/"}]}]}}"##, "https://example.com/search/", app, .noMatch),
        ("E14", ##"{"applinks":{"details":[{"appID":"HOGE123456.com.example.app","appIDs":[],"components":[{"/":"/search/"}]}]}}"##,
         "https://example.com/search/", app, .noMatch),
        ("E15-FOO", ##"{"applinks":{"details":[{"appID":"FOO4567890.a.b","appIDs":["BAR4567890.a.b","BAZ4567890.a.b"],"components":[{"/":"/search/"}]}]}}"##,
         "https://example.com/search/", "FOO4567890.a.b", .noMatch),
        ("E15-BAR", ##"{"applinks":{"details":[{"appID":"FOO4567890.a.b","appIDs":["BAR4567890.a.b","BAZ4567890.a.b"],"components":[{"/":"/search/"}]}]}}"##,
         "https://example.com/search/", "BAR4567890.a.b", .match),
        ("E15-BAZ", ##"{"applinks":{"details":[{"appID":"FOO4567890.a.b","appIDs":["BAR4567890.a.b","BAZ4567890.a.b"],"components":[{"/":"/search/"}]}]}}"##,
         "https://example.com/search/", "BAZ4567890.a.b", .match),
        ("E16", ##"""
         {"applinks":{"details":[{"appIDs":["HOGE123456.com.example.app"],"components":[{"/":"/search/"}]},
          {"appIDs":["HOGE123456.com.example.app"],"components":[{"/":"/search/","exclude":true}]}]}}
         """##, "https://example.com/search/", app, .match),
    ]

    @Test(arguments: rows.map { ExampleRow(row: $0) })
    func example(_ example: ExampleRow) throws {
        let row = example.row
        #expect(try MatcherFixture.decide(row.json, row.url, app: row.app) == row.expected, "\(row.name)")
    }

    /// §6.4 E1: an empty file `{}` names no service, so it is not an association file and no app opens.
    @Test func emptyFileOpensNothing() {
        guard case .notAnAssociationFile = AASADecoder.decode(Array("{}".utf8)) else {
            Issue.record("{} must not decode as an association file")
            return
        }
    }

    /// §6.5 D1: the longest wildcard parent comes first.
    @Test func longestWildcardFirst() {
        let matcher = URLMatcher(entitlementDomains: ["applinks:*.mywebsite.com", "applinks:*.users.mywebsite.com"], files: [:])
        #expect(matcher.candidateHosts(forHost: "emily.users.mywebsite.com") == ["users.mywebsite.com", "mywebsite.com"])
    }

    /// §6.5 D2: `*.D` never covers `D`.
    @Test func wildcardDoesNotCoverParent() throws {
        let file = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"*"}]"##))
        let matcher = URLMatcher(entitlementDomains: ["*.mywebsite.com"], files: ["mywebsite.com": file])
        #expect(matcher.candidateHosts(forHost: "mywebsite.com").isEmpty)
        #expect(matcher.decide(url: "https://mywebsite.com/x", appID: MatcherFixture.app).decision == .noMatch)
    }

    /// §6.5 D3: a `*.example.com` URL is decided by the file from `example.com`.
    @Test func wildcardUsesParentFile() throws {
        let file = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"/x"}]"##))
        let matcher = URLMatcher(entitlementDomains: ["applinks:*.example.com"], files: ["example.com": file])
        let outcome = matcher.decide(url: "https://www.example.com/x", appID: MatcherFixture.app)
        #expect(outcome.decision == .match)
        #expect(outcome.host == "example.com")
    }

    /// §6.5 D4: the exact host's file first, the parent's only when it does not decide.
    @Test func exactHostBeforeParent() throws {
        let www = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"/www-only"},{"/":"/blocked","exclude":true}]"##))
        let parent = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"*"}]"##))
        let matcher = URLMatcher(
            entitlementDomains: ["applinks:www.example.com", "applinks:*.example.com"],
            files: ["www.example.com": www, "example.com": parent]
        )
        let first = matcher.decide(url: "https://www.example.com/www-only", appID: MatcherFixture.app)
        #expect(first.decision == .match && first.host == "www.example.com")
        let fallback = matcher.decide(url: "https://www.example.com/other", appID: MatcherFixture.app)
        #expect(fallback.decision == .match && fallback.host == "example.com")
        // An exclusion at the exact host stops the search.
        let blocked = matcher.decide(url: "https://www.example.com/blocked", appID: MatcherFixture.app)
        #expect(blocked.decision == .exclude && blocked.host == "www.example.com")
    }

    /// §6.5 D5: each host needs its own file.
    @Test func exactHostNeedsItsOwnFile() throws {
        let file = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"*"}]"##))
        let matcher = URLMatcher(entitlementDomains: ["applinks:www.example.com"], files: ["example.com": file])
        #expect(matcher.decide(url: "https://www.example.com/x", appID: MatcherFixture.app).decision == .noMatch)
    }
}

/// Wraps a row so that Swift Testing names each argument.
struct ExampleRow: CustomTestStringConvertible, Sendable {
    let row: AppleExamplesTests.Row
    var testDescription: String { "\(row.name) \(row.url)" }
}
