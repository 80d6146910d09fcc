import AASAFetchCore
import Foundation
import Testing

struct ExplanationTests {
    static let overview = AppleExamplesTests.overview

    func matcher(_ json: String) throws -> URLMatcher {
        URLMatcher(entitlementDomains: ["applinks:example.com"], files: ["example.com": try MatcherFixture.compiled(json)])
    }

    @Test func matchNamesHostDetailAndComponent() throws {
        let explanation = try matcher(Self.overview).explain(url: "https://example.com/buy/1", appID: MatcherFixture.app)
        #expect(explanation.decision == .match)
        #expect(explanation.host == "example.com")
        #expect(explanation.detail == 0)
        #expect(explanation.component == RuleReport(kind: "component", index: 1, rule: ##"{"/":"/buy/*"}"##))
    }

    @Test func noMatchNamesTheFailingQueryItem() throws {
        let explanation = try matcher(Self.overview).explain(url: "https://example.com/help/1?articleNumber=12345", appID: MatcherFixture.app)
        #expect(explanation.decision == .noMatch)
        let nearest = try #require(explanation.nearest)
        #expect(nearest.component.index == 3)
        #expect(nearest.failures == [PartFailure(part: .queryItem, name: "articleNumber", pattern: "????", text: "12345")])
    }

    /// A rule of thousands of query items that all fail lists 20 of them and counts the rest; the
    /// names are found without a scan per item. Regression: a 128 KiB file of 13,000 items took
    /// 140 s per URL (quadratic) and answered with a 600 KB reason.
    @Test(arguments: [true, false])
    func aRuleOfManyFailingQueryItemsListsTwentyAndCountsTheRest(caseSensitive: Bool) throws {
        let names = (0..<6_000).map { "Item\($0)" }
        let items = names.map { "\"\($0)\":\"x\"" }.joined(separator: ",")
        let json = MatcherFixture.components(##"[{"/":"/*","caseSensitive":\##(caseSensitive),"?":{\##(items)}}]"##)
        let explanation = try matcher(json).explain(url: "https://example.com/a?Item7=y", appID: MatcherFixture.app)
        #expect(explanation.decision == .noMatch)
        let nearest = try #require(explanation.nearest)
        #expect(nearest.failures.count == NearMiss.listedFailures)
        #expect(nearest.unlistedFailures == names.count - NearMiss.listedFailures)
        #expect(nearest.matchedParts == 1, "the path matched")
        #expect(nearest.failures.compactMap(\.name) == Array(names.prefix(NearMiss.listedFailures)), "names as written")
        #expect(explanation.reason.hasSuffix("; and \(names.count - NearMiss.listedFailures) more parts of the rule fail"))
        #expect(explanation.reason.utf8.count < 4_000)
    }

    @Test func noMatchSaysCaseOnly() throws {
        let explanation = try matcher(MatcherFixture.components(##"[{"/":"/Help/*"}]"##))
            .explain(url: "https://example.com/help/1", appID: MatcherFixture.app)
        let failure = try #require(explanation.nearest?.failures.first)
        #expect(failure.part == .path)
        #expect(failure.caseOnly)
        #expect(explanation.reason.contains("case only"))
    }

    @Test func noMatchNamesTheVariableWithoutValue() throws {
        let json = MatcherFixture.components(
            ##"[{"/":"/$(lang)_$(region)/$(food)/"}]"##, extraApplinks: ##""substitutionVariables":{"food":["pizza"]},"##
        )
        let explanation = try matcher(json).explain(url: "https://example.com/en_US/tacos/", appID: MatcherFixture.app)
        #expect(explanation.nearest?.failures.first?.variablesWithoutValue == ["food"])
        let undefined = try matcher(MatcherFixture.components(##"[{"/":"/$(nope)"}]"##))
            .explain(url: "https://example.com/x", appID: MatcherFixture.app)
        #expect(undefined.nearest?.failures.first?.variablesWithoutValue == ["nope"])
    }

    @Test func noMatchForUncoveredHostAndUnlistedApp() throws {
        let uncovered = try matcher(Self.overview).explain(url: "https://evil.test/buy/1", appID: MatcherFixture.app)
        #expect(uncovered.decision == .noMatch && uncovered.reason.contains("not covered"))
        let unlisted = try matcher(Self.overview).explain(url: "https://example.com/buy/1", appID: "OTHER12345.x")
        #expect(unlisted.reason.contains("no applinks detail lists"))
    }

    @Test func encodesAsJSONWithStableKeys() throws {
        let explanation = try matcher(Self.overview).explain(url: "https://example.com/buy/1#no_universal_links", appID: MatcherFixture.app)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(explanation), as: UTF8.self)
        #expect(json.contains(##""decision":"exclude""##))
        #expect(json.contains(##""appID":"HOGE123456.com.example.app""##))
        #expect(json.contains(##""component":{"index":0,"inherited":[],"kind":"component""##))
        let line = String(decoding: try encoder.encode(MatchLineResponse(id: 0, decision: .noMatch)), as: UTF8.self)
        #expect(line == ##"{"decision":"no_match","id":0}"##)
    }
}
