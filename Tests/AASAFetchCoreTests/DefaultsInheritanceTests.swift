import AASAFetchCore
import Foundation
import Testing

/// `defaults` at both levels supply every component key a component leaves out: the decoder,
/// the matcher and its explanation, lint and diff.
struct DefaultsInheritanceTests {
    static let app = MatcherFixture.app

    /// A file with one detail for `app`; `applinks` and `detail` are extra members (with a
    /// trailing comma) of `applinks` and of the detail.
    static func file(components: String, applinks: String = "", detail: String = "") -> String {
        #"{"applinks":{\#(applinks)"details":[{\#(detail)"appIDs":["\#(app)"],"components":[\#(components)]}]}}"#
    }

    func explain(_ json: String, _ url: String) throws -> MatchExplanation {
        URLMatcher(entitlementDomains: ["applinks:example.com"], files: ["example.com": try MatcherFixture.compiled(json)])
            .explain(url: url, appID: Self.app)
    }

    // MARK: Decoder

    @Test func decoderReadsEveryComponentKeyInDefaults() throws {
        let json = Self.file(
            components: #"{"comment":"all"}"#,
            applinks: ##""defaults":{"/":"/a/*","?":{"q":"1"},"#":"top","exclude":true,"caseSensitive":false,"percentEncoded":false,"comment":"x","path":"/zzz"},"##,
            detail: #""defaults":{"?":"x=1","exclude":false},"#)
        let document = try ModelFromJSON.document(json: json)
        let applinks = try #require(document.applinks)
        #expect(applinks.defaults == ComponentDefaults(
            path: "/a/*", query: .items([QueryItemPattern(name: "q", pattern: "1")]), fragment: "top", exclude: true,
            caseSensitive: false, percentEncoded: false))
        #expect(applinks.details[0].defaults == ComponentDefaults(query: .string("x=1"), exclude: false))
        // A component that does not write `exclude` leaves it unset, so it can inherit it.
        #expect(applinks.details[0].components?[0].exclude == nil)
    }

    @Test func wronglyTypedDefaultsAreDroppedWithTheirCodes() throws {
        let json = Self.file(components: #"{"/":"/x"}"#, applinks: ##""defaults":{"/":5,"exclude":"yes","?":{"q":1}},"##)
        let result = AASADecoder.decode(Array(json.utf8))
        let defaults = try #require(result.document?.applinks?.defaults)
        #expect(defaults.path == nil)
        #expect(defaults.exclude == nil)
        #expect(defaults.query == .ignored)
        let codes = result.findings.map(\.code)
        #expect(codes.contains("wrong-type"))
        let exclude = try #require(result.findings.first { $0.code == "exclude-not-boolean" })
        #expect(exclude.location == "/applinks/defaults/exclude")
        #expect(exclude.message.contains("every component that inherits it"))
        let query = try #require(result.findings.first { $0.code == "query-value-not-string" })
        #expect(query.message.contains("every component that inherits it matches any query"))
    }

    // MARK: Resolution

    @Test func resolutionOrderIsComponentThenDetailThenApplinks() {
        let component = ComponentRule(fragment: "own", options: ComponentDefaults(caseSensitive: true))
        let detail = ComponentDefaults(path: "/detail/*", fragment: "detail", exclude: false)
        let domain = ComponentDefaults(path: "/domain/*", query: .string("q=1"), exclude: true, caseSensitive: false, percentEncoded: false)
        let resolved = component.resolved(detailDefaults: detail, applinksDefaults: domain)
        #expect(resolved.rule.path == "/detail/*")
        #expect(resolved.rule.query == .string("q=1"))
        #expect(resolved.rule.fragment == "own")
        #expect(resolved.rule.exclude == false)
        #expect(resolved.caseSensitive)
        #expect(!resolved.percentEncoded)
        #expect(!resolved.isExclusion)
        #expect(resolved.inherited == [
            InheritedKey(key: .path, level: .detail, value: #""/detail/*""#),
            InheritedKey(key: .query, level: .applinks, value: #""q=1""#),
            InheritedKey(key: .exclude, level: .detail, value: "false"),
            InheritedKey(key: .percentEncoded, level: .applinks, value: "false"),
        ])
        let bare = ComponentRule().resolved(detailDefaults: nil, applinksDefaults: nil)
        #expect(bare.inherited.isEmpty)
        #expect(!bare.isExclusion && bare.caseSensitive && bare.percentEncoded)
    }

    // MARK: Matching and explanation

    /// The three examples of the issue.
    @Test func examplesFromTheIssue() throws {
        let path = Self.file(components: ##"{"#":"*"}"##, applinks: #""defaults":{"/":"/shop/*"},"#)
        #expect(try MatcherFixture.decide(path, "https://example.com/shop/1") == .match)
        #expect(try MatcherFixture.decide(path, "https://example.com/other") == .noMatch)
        let exclude = Self.file(components: #"{"/":"/a/*"},{"/":"/b/*","exclude":false}"#, applinks: #""defaults":{"exclude":true},"#)
        #expect(try MatcherFixture.decide(exclude, "https://example.com/a/1") == .exclude)
        #expect(try MatcherFixture.decide(exclude, "https://example.com/b/1") == .match)
        let query = Self.file(components: #"{"/":"/p"}"#, applinks: #""defaults":{"?":{"ref":"???"}},"#)
        #expect(try MatcherFixture.decide(query, "https://example.com/p?ref=abc") == .match)
        #expect(try MatcherFixture.decide(query, "https://example.com/p?ref=abcd") == .noMatch)
        #expect(try MatcherFixture.decide(query, "https://example.com/p") == .noMatch)
    }

    @Test func matchSaysWhichKeysCameFromWhichLevel() throws {
        let json = Self.file(
            components: ##"{"#":"*"}"##, applinks: #""defaults":{"exclude":true,"/":"/ignored/*"},"#, detail: #""defaults":{"/":"/shop/*"},"#)
        let explanation = try explain(json, "https://example.com/shop/1")
        #expect(explanation.decision == .exclude)
        #expect(explanation.component == RuleReport(
            kind: "component", index: 0, rule: ##"{"#":"*"}"##,
            inherited: [
                InheritedKey(key: .path, level: .detail, value: #""/shop/*""#),
                InheritedKey(key: .exclude, level: .applinks, value: "true"),
            ]))
        #expect(explanation.reason.hasSuffix(
            #"; from defaults: "/":"/shop/*" from the detail's defaults, "exclude":true from applinks.defaults"#), "\(explanation.reason)")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(explanation), as: UTF8.self)
        #expect(text.contains(#""inherited":[{"key":"/","level":"detail","value":"\"/shop/*\""},{"key":"exclude","level":"applinks","value":"true"}]"#), "\(text)")
    }

    @Test func matchWithoutInheritedKeysHasAnEmptyInheritedList() throws {
        let explanation = try explain(Self.file(components: #"{"/":"/a","exclude":false}"#, applinks: #""defaults":{"exclude":true},"#), "https://example.com/a")
        #expect(explanation.decision == .match)
        #expect(explanation.component?.inherited.isEmpty == true)
        #expect(!explanation.reason.contains("defaults"))
        let text = try ReportJSONWriter(style: .compact).string(explanation)
        #expect(text.contains(#""inherited":[]"#))
    }

    @Test func noMatchSaysTheFailingPatternCameFromDefaults() throws {
        let json = Self.file(components: ##"{"#":"*"}"##, applinks: #""defaults":{"/":"/shop/*"},"#)
        let explanation = try explain(json, "https://example.com/other")
        #expect(explanation.decision == .noMatch)
        let nearest = try #require(explanation.nearest)
        #expect(nearest.component.inherited == [InheritedKey(key: .path, level: .applinks, value: #""/shop/*""#)])
        #expect(nearest.failures == [PartFailure(part: .path, pattern: "/shop/*", text: "/other", inheritedFrom: .applinks)])
        #expect(explanation.reason.contains(#"path "/other" does not match "/shop/*" (pattern from applinks.defaults)"#), "\(explanation.reason)")
        let query = try explain(Self.file(components: #"{"/":"/p"}"#, detail: #""defaults":{"?":{"ref":"???"}},"#), "https://example.com/p?ref=1")
        #expect(query.nearest?.failures.first?.inheritedFrom == .detail)
        #expect(query.nearest?.failures.first?.name == "ref")
    }

    // MARK: Lint

    /// `defaults` setting one key, its pointer suffix, and a first component that inherits it.
    @Test(arguments: [
        (##"{"/":"/a/*"}"##, "/~1", ##"{"#":"c"}"##), (##"{"?":{"q":"1"}}"##, "/?", ##"{"/":"/c"}"##),
        (##"{"?":"q=1"}"##, "/?", ##"{"/":"/c"}"##), (##"{"#":"x"}"##, "/#", ##"{"/":"/c"}"##),
        (##"{"exclude":true}"##, "/exclude", ##"{"/":"/c"}"##), (##"{"exclude":false}"##, "/exclude", ##"{"/":"/c"}"##),
    ])
    func lintNotesInheritedKeysAtBothLevels(defaults: String, suffix: String, first: String) throws {
        let components = first + ##",{"/":"/own","?":"o","#":"o","exclude":false}"##
        for (json, pointer) in [
            (Self.file(components: components, applinks: #""defaults":\#(defaults),"#), "/applinks/defaults"),
            (Self.file(components: components, detail: #""defaults":\#(defaults),"#), "/applinks/details/0/defaults"),
        ] {
            let findings = AASALinter.lint(Array(json.utf8))
            let notes = findings.filter { $0.code == "defaults-inherited-key" }
            #expect(notes.count == 1, "\(findings.map(\.code))")
            let note = try #require(notes.first)
            #expect(note.location == pointer + suffix)
            #expect(note.severity == .info)
            #expect(note.message.contains("(1 of 2 components"), "\(note.message)")
            #expect(note.fix?.isEmpty == false)
            #expect(!findings.contains { $0.severity != .info }, "\(findings.map(\.code))")
        }
    }

    @Test func lintIsSilentForFlagsAndCommentsInDefaults() {
        let json = Self.file(
            components: #"{"/":"/a"}"#, applinks: #""defaults":{"caseSensitive":false,"comment":"site-wide"},"#,
            detail: #""defaults":{"percentEncoded":true,"comment":"app"},"#)
        #expect(AASALinter.lint(Array(json.utf8)).isEmpty)
        let unknown = AASALinter.lint(Array(Self.file(components: #"{"/":"/a"}"#, applinks: #""defaults":{"path":"/a"},"#).utf8))
        #expect(unknown.map(\.code) == ["unknown-key"])
        #expect(unknown.first?.location == "/applinks/defaults/path")
    }

    @Test func lintJudgesComponentsWithTheirInheritedKeys() {
        func codes(_ json: String) -> [String] {
            AASALinter.lint(Array(json.utf8)).map(\.code).filter { $0 != "defaults-inherited-key" }
        }
        // `{}` inherits a path: not an empty component, and not a catch-all hiding the next one.
        #expect(codes(Self.file(components: #"{},{"/":"/b"}"#, applinks: #""defaults":{"/":"/a/*"},"#)) == [])
        // Two components that read the same once defaults are filled in: the second is unreachable.
        #expect(codes(Self.file(components: ##"{"#":"x"},{"/":"/a/*","#":"x"}"##, detail: #""defaults":{"/":"/a/*"},"#)) == ["unreachable-rule"])
        // An inherited exclusion of an empty component says it blocks every URL.
        let blocking = AASALinter.lint(Array(Self.file(components: #"{"comment":"c"}"#, applinks: #""defaults":{"exclude":true},"#).utf8))
        #expect(blocking.first { $0.code == "empty-component" }?.message.contains("blocks them all") == true)
        // Patterns written in defaults are checked there, once, and count as using their variables.
        let variables = AASALinter.lint(Array(Self.file(
            components: ##"{"#":"a"},{"#":"b"}"##,
            applinks: #""substitutionVariables":{"section":["shop"]},"defaults":{"/":"/$(section)/$(nope)/*"},"#).utf8))
        #expect(variables.filter { $0.code == "undefined-variable" }.map(\.location) == ["/applinks/defaults/~1"])
        #expect(!variables.contains { $0.code == "variable-unused" })
    }

    // MARK: Diff

    func diff(_ old: String, _ new: String) throws -> [AASAChange] {
        AASADiff.changes(from: try ModelFromJSON.document(json: old), to: try ModelFromJSON.document(json: new))
    }

    /// Moving each key from the components into `defaults` (either level) is no change.
    @Test(arguments: [
        (##""/":"/shop/*""##), (##""?":{"ref":"???"}"##), (##""?":"q=1""##), (##""#":"top""##), (##""exclude":true"##),
        (##""caseSensitive":false"##), (##""percentEncoded":false"##),
    ])
    func movingAKeyIntoDefaultsIsNoChange(member: String) throws {
        let written = Self.file(components: #"{"comment":"a",\#(member)},{"comment":"b",\#(member)}"#)
        for moved in [
            Self.file(components: #"{"comment":"a"},{"comment":"b"}"#, applinks: "\"defaults\":{\(member)},"),
            Self.file(components: #"{"comment":"a"},{"comment":"b"}"#, detail: "\"defaults\":{\(member)},"),
            // A default every component overrides means nothing.
            Self.file(components: #"{"comment":"a",\#(member)},{"comment":"b",\#(member)}"#, applinks: "\"defaults\":{\(member.replacingOccurrences(of: "true", with: "false").replacingOccurrences(of: "\"/shop/*\"", with: "\"/x\""))},"),
        ] {
            #expect(try diff(written, moved) == [], "\(moved)")
            #expect(try diff(moved, written) == [], "\(moved)")
        }
    }

    @Test func explicitBuiltInValuesAreNoChange() throws {
        let bare = Self.file(components: #"{"/":"/a"}"#)
        let explicit = Self.file(components: #"{"/":"/a","exclude":false,"caseSensitive":true,"percentEncoded":true}"#)
        #expect(try diff(bare, explicit) == [])
    }

    @Test func changingAnInheritedDefaultChangesTheRulesAndSaysWhy() throws {
        let old = Self.file(components: ##"{"#":"a"},{"/":"/own"}"##, applinks: #""defaults":{"/":"/shop/*"},"#)
        let new = Self.file(components: ##"{"#":"a"},{"/":"/own"}"##, applinks: #""defaults":{"/":"/store/*"},"#)
        let changes = try diff(old, new)
        #expect(changes.map(\.kind) == ["defaults-changed", "rules-changed"])
        #expect(changes.map(\.appID) == [nil, Self.app])
        #expect(changes.map(\.description) == ["applinks.defaults changed", "applinks rules for \(Self.app) changed: 1 added, 1 removed (2 → 2 rules)"])
        #expect(changes.map(\.beforeText) == [#"{"/":"/shop/*"}"#, ##"1. {"/":"/shop/*","#":"a"}"##])
        #expect(changes.map(\.afterText) == [#"{"/":"/store/*"}"#, ##"1. {"/":"/store/*","#":"a"}"##])
        #expect(changes.first?.before == .defaults(DefaultsValue(path: "/shop/*")))
        let detailOld = Self.file(components: #"{"/":"/a"}"#, detail: #""defaults":{"exclude":true},"#)
        let detailNew = Self.file(components: #"{"/":"/a"}"#, detail: #""defaults":{},"#)
        #expect(try diff(detailOld, detailNew).map(\.kind) == ["rules-changed", "defaults-changed"])
    }
}

/// Seeded property test: writing the `defaults` out into every component (component keys win,
/// then the detail's, then `applinks`'s) and dropping them gives the same decision, by the same
/// detail and component, for random files and URLs.
struct DefaultsPropertyTests {
    typealias Object = [String: Any]

    static let paths = ["/a/*", "/a/b", "/A/*", "*", "/b/?", "/caf%C3%A9/*", "/café/*", "/$(digit)/*", "/x y", "/a/?*"]
    static var queries: [Any] { ["q=1", "*", "q=?*", ["q": "1"], ["q": "?*", "r": "*"], ["Q": "1"], ["q": 5], ["r": "$(digit)"]] }
    static let fragments = ["top", "*", "?*", "T*", ""]
    static let urlPaths = ["/a/1", "/a/b", "/A/x", "/a", "/b/z", "/caf%C3%A9/m", "/CAF%c3%a9/m", "/x%20y", "/7/k", "/", ""]
    static let urlQueries: [String?] = [nil, "q=1", "q=2&r=3", "Q=1", "q=", "r=1", "q=1&q=2"]
    static let urlFragments: [String?] = [nil, "top", "TOP", "x", ""]

    /// A random set of component keys (pattern keys always valid, so writing them out is exact).
    static func keys(_ random: inout SeededGenerator, probability: Double) -> Object {
        var object: Object = [:]
        func maybe() -> Bool { Double.random(in: 0..<1, using: &random) < probability }
        if maybe() { object["/"] = paths.randomElement(using: &random) }
        if maybe() { object["?"] = queries.randomElement(using: &random) }
        if maybe() { object["#"] = fragments.randomElement(using: &random) }
        if maybe() { object["exclude"] = Bool.random(using: &random) }
        if maybe() { object["caseSensitive"] = Bool.random(using: &random) }
        if maybe() { object["percentEncoded"] = Bool.random(using: &random) }
        if maybe() { object["comment"] = "c" }
        return object
    }

    static func merged(_ levels: Object?...) -> Object {
        var result: Object = [:]
        for level in levels.reversed() {
            for (key, value) in level ?? [:] where key != "comment" { result[key] = value }
        }
        return result
    }

    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(arguments: [UInt64(101), 202, 303])
    func writingDefaultsOutKeepsEveryDecision(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let app = MatcherFixture.app
        var decisions = 0
        var inheritedDecisions = 0
        for _ in 0..<150 {
            let applinksDefaults: Object? = Bool.random(using: &random) ? Self.keys(&random, probability: 0.45) : nil
            var details: [Object] = []
            var writtenOut: [Object] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let detailDefaults: Object? = Bool.random(using: &random) ? Self.keys(&random, probability: 0.45) : nil
                let components = (0..<Int.random(in: 0...4, using: &random)).map { _ in Self.keys(&random, probability: 0.35) }
                let appIDs = Int.random(in: 0..<5, using: &random) == 0 ? ["ABCDE12345.other.app"] : [app]
                var detail: Object = ["appIDs": appIDs, "components": components]
                if let detailDefaults { detail["defaults"] = detailDefaults }
                details.append(detail)
                writtenOut.append(["appIDs": appIDs, "components": components.map { Self.merged($0, detailDefaults, applinksDefaults) }])
            }
            var applinks: Object = ["details": details]
            if let applinksDefaults { applinks["defaults"] = applinksDefaults }
            let original = try Self.json(["applinks": applinks])
            let expanded = try Self.json(["applinks": ["details": writtenOut]])
            let withDefaults = try MatcherFixture.compiled(original)
            let withoutDefaults = try MatcherFixture.compiled(expanded)
            #expect(withoutDefaults.document.applinks?.details.allSatisfy { $0.defaults == nil } == true)
            for _ in 0..<60 {
                var url = "https://example.com" + (Self.urlPaths.randomElement(using: &random) ?? "/")
                if let query = Self.urlQueries.randomElement(using: &random) ?? nil { url += "?" + query }
                if let fragment = Self.urlFragments.randomElement(using: &random) ?? nil { url += "#" + fragment }
                let a = withDefaults.decide(url: url, appID: app)
                let b = withoutDefaults.decide(url: url, appID: app)
                #expect(a.decision == b.decision && a.detail == b.detail && a.rule == b.rule, "\(original)\n\(expanded)\n\(url)")
                decisions += 1
                if a.decision != .noMatch, withDefaults.explain(url: url, appID: app).component?.inherited.isEmpty == false {
                    inheritedDecisions += 1
                }
            }
        }
        #expect(decisions == 150 * 60)
        // The generator really exercises inheritance: many decisions rest on inherited keys.
        #expect(inheritedDecisions > 300, "\(inheritedDecisions)")
    }
}
