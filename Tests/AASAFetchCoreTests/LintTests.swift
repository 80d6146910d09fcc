import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

struct LintTests {
    static let app = "ABCDE12345.com.example.app"

    /// A file with one detail for `app` holding `components` (JSON text).
    static func components(_ components: String, extra: String = "") -> String {
        #"{"applinks":{\#(extra)"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[\#(components)]}]}}"#
    }

    static func paths(_ paths: String) -> String {
        #"{"applinks":{"details":[{"appID":"ABCDE12345.com.example.app","paths":[\#(paths)]}]}}"#
    }

    struct Case: Sendable, CustomStringConvertible {
        var json: String
        var code: String
        var location: String?
        var description: String { "\(code) @ \(location ?? "-")" }
        init(_ json: String, _ code: String, _ location: String?) {
            self.json = json
            self.code = code
            self.location = location
        }
    }

    static let cases: [Case] = [
        // Keys.
        Case(#"{"applinks":{"Details":[]}}"#, "unknown-key", "/applinks/Details"),
        Case(#"{"applinks":{"Details":[]}}"#, "missing-details", "/applinks"),
        Case(components(#"{"/":"/a","excludes":true}"#), "unknown-key", "/applinks/details/0/components/0/excludes"),
        Case(#"{"applinks":{"details":[{"appId":"ABCDE12345.a.b","paths":["*"]}]}}"#, "unknown-key", "/applinks/details/0/appId"),
        Case(#"{"applinks":{"details":[{"appId":"ABCDE12345.a.b","paths":["*"]}]}}"#, "detail-without-app-id", "/applinks/details/0"),
        Case(#"{"webcredentials":{"apps":["ABCDE12345.a.b"],"app":[]}}"#, "unknown-key", "/webcredentials/app"),
        Case(#"{"applinks":{"details":[]},"webcredential":{}}"#, "unknown-service", "/webcredential"),
        Case(components(#"{"/":"/a"}"#, extra: #""defaults":{"caseSensitive":false,"exclude":true},"#), "defaults-inherited-key", "/applinks/defaults/exclude"),
        Case(#"{"applinks":{"details":[],"details":[]}}"#, "duplicate-key", "/applinks/details"),
        // Types.
        Case(components(#"{"/":"/a","exclude":"true"}"#), "exclude-not-boolean", "/applinks/details/0/components/0/exclude"),
        Case(components(#"{"/":"/a","caseSensitive":"false"}"#), "wrong-type", "/applinks/details/0/components/0/caseSensitive"),
        Case(components(#"{"?":{"f":true}}"#), "query-value-not-string", "/applinks/details/0/components/0/?/f"),
        Case(#"{"applinks":{"details":{"ABCDE12345.a.b":{"paths":["*"]}}}}"#, "legacy-details-dictionary", "/applinks/details"),
        // In the dictionary form the key is the app ID: one inside is never read (lint said nothing).
        Case(#"{"applinks":{"details":{"ZZZZZ12345.x.y":{"appIDs":["ABCDE12345.a.b"],"paths":["*"]}}}}"#, "unknown-key",
             "/applinks/details/ZZZZZ12345.x.y/appIDs"),
        // Legacy and modern keys mixed: iOS 12 sees no app, or no rules.
        Case(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"paths":["/a/*"]}]}}"#, "mixed-formats", "/applinks/details/0/appIDs"),
        Case(#"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","components":[{"/":"/b/*"}]}]}}"#, "mixed-formats", "/applinks/details/0/appID"),
        // Structure.
        Case(#"{"applinks":{"apps":["ABCDE12345.a.b"],"details":[]}}"#, "apps-not-empty", "/applinks/apps"),
        Case(#"{"applinks":{"details":[]}}"#, "empty-details", "/applinks/details"),
        Case(#"{"applinks":{"details":{}}}"#, "empty-details", "/applinks/details"),
        Case(#"{"webcredentials":{}}"#, "missing-apps", "/webcredentials"),
        Case(#"{"webcredentials":{"apps":[]}}"#, "empty-apps", "/webcredentials/apps"),
        Case(#"{"applinks":{"details":[{"appIDs":[],"components":[{"/":"*"}]}]}}"#, "empty-app-ids", "/applinks/details/0/appIDs"),
        Case(
            #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","appIDs":["ABCDE12345.a.c"],"components":[{"/":"*"}]}]}}"#,
            "app-id-and-app-ids", "/applinks/details/0/appID"),
        Case(#"{"applinks":{"details":[{"appID":"ABCDE12345.a.b"}]}}"#, "detail-without-rules", "/applinks/details/0"),
        Case(components(""), "empty-components", "/applinks/details/0/components"),
        Case(paths(""), "empty-paths", "/applinks/details/0/paths"),
        Case(
            #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["*"],"components":[{"/":"*"}]}]}}"#,
            "paths-and-components", "/applinks/details/0/paths"),
        // App IDs.
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "YOUR_TEAM_ID.com.example.app"), "app-id-placeholder", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "TEAM_ID.com.example.app"), "app-id-placeholder", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "TEAMID.com.example.app"), "app-id-placeholder", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "ABCDE12345.com.yourcompany.yourapp"), "app-id-placeholder", "/applinks/details/0/appID"),
        // Apple's bundle IDs hold letters, digits, '-' and '.': fetch called `_` malformed, lint let it pass.
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "ABCDE12345.com.my_app"), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "$(TeamIdentifierPrefix)com.example.app"), "app-id-placeholder", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "com.example.app"), "app-id-missing-prefix", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "ABCDE1234.com.example.app"), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "abcde12345.com.example.app"), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "ABCDE12345.com..app"), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "ABCDE12345."), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: " ABCDE12345.com.example.app"), "app-id-invalid", "/applinks/details/0/appID"),
        Case(paths(#""*""#).replacingOccurrences(of: app, with: "1234567890.com.example.app"), "app-id-numeric-prefix", "/applinks/details/0/appID"),
        Case(#"{"appclips":{"apps":["com.example.Clip"]}}"#, "app-id-missing-prefix", "/appclips/apps/0"),
        Case(
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"*"}]},{"appIDs":["ABCDE12345.a.c","ABCDE12345.a.b"],"components":[{"/":"/x"}]}]}}"#,
            "duplicate-app-id", "/applinks/details/1/appIDs/1"),
        Case(#"{"webcredentials":{"apps":["ABCDE12345.a.b","ABCDE12345.a.b"]}}"#, "duplicate-app-id", "/webcredentials/apps/1"),
        // Rules.
        Case(components(#"{"comment":"all"},{"/":"/x"}"#), "empty-component", "/applinks/details/0/components/0"),
        Case(components(#"{"comment":"all"},{"/":"/x"}"#), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(components(##"{"/":"*","?":"**","#":"*"},{"/":"/x"}"##), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(components(#"{"/":"*","?":{"q":"*"}},{"/":"/x"}"#), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(components(#"{"/":"/a","comment":"1"},{"/":"/a","exclude":true}"#), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(paths(#""/a","*","/b""#), "unreachable-rule", "/applinks/details/0/paths/2"),
        Case(paths(#""NOT *","/b""#), "unreachable-rule", "/applinks/details/0/paths/1"),
        // `/*` is the usual catch-all: leading and trailing slashes do not count in matching.
        Case(components(#"{"/":"/*"},{"/":"/a"}"#), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(components(#"{"/":"/*/","exclude":true},{"/":"/a"}"#), "unreachable-rule", "/applinks/details/0/components/1"),
        Case(paths(#""/*","/a""#), "unreachable-rule", "/applinks/details/0/paths/1"),
        Case(paths(#""/a","/a""#), "unreachable-rule", "/applinks/details/0/paths/1"),
        Case(components(#"{"/":"NOT /private/*"}"#), "not-in-components", "/applinks/details/0/components/0/~1"),
        Case(paths(#""not /private/*""#), "not-prefix-malformed", "/applinks/details/0/paths/0"),
        Case(components(#"{"/":"/#/settings"}"#), "fragment-in-path", "/applinks/details/0/components/0/~1"),
        Case(paths(#""/#/settings""#), "fragment-in-path", "/applinks/details/0/paths/0"),
        Case(paths(#""/join?*""#), "query-in-path", "/applinks/details/0/paths/0"),
        Case(components(#"{"/":"/search?q=*"}"#), "query-in-path", "/applinks/details/0/components/0/~1"),
        Case(components(#"{"/":"buy/*"}"#), "path-without-leading-slash", "/applinks/details/0/components/0/~1"),
        Case(components(#"{"/":"/café/*"}"#), "non-ascii-pattern", "/applinks/details/0/components/0/~1"),
        // Substitution variables.
        Case(components(#"{"/":"/$(food)/*"}"#), "undefined-variable", "/applinks/details/0/components/0/~1"),
        Case(components(#"{"?":{"l":"$(language)"}}"#), "undefined-variable", "/applinks/details/0/components/0/?/l"),
        Case(components(##"{"#":"$(oops"}"##), "unterminated-variable", "/applinks/details/0/components/0/#"),
        Case(components(#"{"/":"/x"}"#, extra: #""substitutionVariables":{"a$b":["x"]},"#), "variable-name-invalid", "/applinks/substitutionVariables/a$b"),
        Case(components(#"{"/":"/x"}"#, extra: #""substitutionVariables":{"a(b)":["x"]},"#), "variable-name-invalid", "/applinks/substitutionVariables/a(b)"),
        Case(components(#"{"/":"/$(a)"}"#, extra: #""substitutionVariables":{"a":["$(b)"],"b":["x"]},"#), "variable-in-value", "/applinks/substitutionVariables/a/0"),
        Case(components(#"{"/":"/$(lang)"}"#, extra: #""substitutionVariables":{"lang":["en"]},"#), "variable-shadows-builtin", "/applinks/substitutionVariables/lang"),
        Case(components(#"{"/":"/$(a)"}"#, extra: #""substitutionVariables":{"a":[]},"#), "variable-empty", "/applinks/substitutionVariables/a"),
        Case(components(#"{"/":"/x"}"#, extra: #""substitutionVariables":{"unused":["x"]},"#), "variable-unused", "/applinks/substitutionVariables/unused"),
        // Whole file.
        Case("{\"applinks\":{\"details\":[],}}", "invalid-json", "1:27"),
        Case("[]", "not-an-association-file", ""),
    ]

    @Test(arguments: cases)
    func reportsProblem(_ c: Case) throws {
        let findings = AASALinter.lint(Array(c.json.utf8))
        let match = findings.first { $0.code == c.code && $0.location == c.location }
        let found = try #require(match, "got \(findings.map { "\($0.code) \($0.location ?? "-")" })")
        let entry = try #require(AASALinter.catalog.first { $0.code == c.code })
        #expect(found.severity == entry.severity)
        #expect(found.fix?.isEmpty == false)
    }

    /// A legacy path is matched with the file's substitution variables, as a component is: lint
    /// counts a variable it uses as used (it said "not used by any component"), reports one it
    /// does not define, and the matcher matches it (the file's own variables never matched,
    /// built-in ones did), with an explanation of the same rule.
    @Test func legacyPathsUseTheFilesVariables() throws {
        let file = #"{"applinks":{"details":[{"appID":"ABCDE12345.com.example.app","paths":["NOT /$(v)/private","/$(v)/*","/id/$(digit)","/$(nope)/x"]}],"substitutionVariables":{"v":["en","fr"]}}}"#
        let findings = AASALinter.lint(Array(file.utf8))
        #expect(!findings.contains { $0.code == "variable-unused" }, "\(findings)")
        #expect(findings.contains { $0.code == "undefined-variable" && $0.location == "/applinks/details/0/paths/3" }, "\(findings)")
        let compiled = CompiledAssociation(document: try #require(AASADecoder.decode(Array(file.utf8)).document))
        func decide(_ path: String) -> MatchDecision { compiled.decide(url: "https://example.com" + path, appID: Self.app).decision }
        #expect(decide("/en/home") == .match)
        #expect(decide("/fr/private") == .exclude)
        #expect(decide("/de/home") == .noMatch)
        #expect(decide("/id/7") == .match)
        let unused = #"{"applinks":{"details":[{"appID":"ABCDE12345.com.example.app","paths":["/a/*"]}],"substitutionVariables":{"v":["en"]}}}"#
        #expect(AASALinter.lint(Array(unused.utf8)).first { $0.code == "variable-unused" }?.message
                    .hasPrefix("substitution variable \"v\" is not used by any component or legacy path") == true)
    }

    @Test func cleanFilesAreSilent() {
        let clean = [
            Self.components(##"{"#":"no","exclude":true},{"/":"/buy/*"},{"/":"/help/*","?":{"articleNumber":"????"}},{"/":"/$(lang)_$(region)/$(food)/"}"##,
                            extra: #""defaults":{"caseSensitive":false},"substitutionVariables":{"food":["pizza"]},"#),
            Self.paths(#""/a/*","NOT /b/*","*""#),
            #"{"applinks":{"apps":[],"details":[{"appID":"ABCDE12345.a.b","paths":["*"]}]},"webcredentials":{"apps":["ABCDE12345.a.b"]}}"#,
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/中/*","percentEncoded":false}]}]}}"#,
        ]
        for text in clean {
            #expect(AASALinter.lint(Array(text.utf8)).isEmpty, "\(text)")
        }
    }

    @Test func suggestionsAndPositions() throws {
        let text = "{\n  \"applinks\": {\n    \"Details\": []\n  }\n}"
        let findings = AASALinter.lint(Array(text.utf8))
        let unknown = try #require(findings.first { $0.code == "unknown-key" })
        #expect(unknown.message.contains("did you mean \"details\""))
        #expect(unknown.message.hasSuffix("(line 3, column 16)"))
        #expect(unknown.fix == "Rename \"Details\" to \"details\" (keys are case-sensitive).")
        let variable = AASALinter.lint(Array(Self.components(#"{"/":"/$(digits)"}"#).utf8)).first { $0.code == "undefined-variable" }
        #expect(variable?.message.contains("did you mean $(digit)") == true)
    }

    @Test func orderIsByPositionWithWholeFileFirst() {
        let text = #"{"applinks":{"details":[{"appID":"bad","paths":["*","/x"]}],"details":[]}}"#
        let findings = AASALinter.lint(Array(text.utf8), options: LintOptions(maxSize: text.utf8.count))
        #expect(findings.map(\.code) == ["size-near-limit", "duplicate-key", "empty-details"])
        let bad = #"{"applinks":{"details":[{"appID":"bad","paths":["*","/x"]}]}}"#
        #expect(AASALinter.lint(Array(bad.utf8)).map(\.code) == ["app-id-invalid", "unreachable-rule"])
    }

    @Test(arguments: [(93, "too-large"), (94, "size-near-limit"), (104, "size-near-limit"), (105, nil)])
    func sizeLimits(maxSize: Int, code: String?) {
        let text = Self.components(#"{"/":"/x"}"#)  // 94 bytes
        #expect(text.utf8.count == 94)
        let sizeCodes = AASALinter.lint(Array(text.utf8), options: LintOptions(maxSize: maxSize))
            .map(\.code).filter { $0 == "too-large" || $0 == "size-near-limit" }
        #expect(sizeCodes == (code.map { [$0] } ?? []))
        #expect(AASALinter.lint(Array(text.utf8), options: LintOptions(maxSize: 1)).first?.code == "too-large")
    }

    @Test func bomIsReported() {
        let findings = AASALinter.lint([0xEF, 0xBB, 0xBF] + Array(Self.paths(#""*""#).utf8))
        #expect(findings.map(\.code) == ["bom"])
        #expect(findings.first?.severity == .warning)
    }

    @Test func catalogCodesAreUniqueKebabCase() {
        let codes = AASALinter.catalog.map(\.code)
        #expect(Set(codes).count == codes.count)
        for code in codes {
            #expect(code.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || $0 == "-" }, "\(code)")
        }
    }

    // MARK: Conformance validation cases

    /// Our code for each code of the other implementation in cases.json `validation`.
    static let conformanceCodes: [String: String] = [
        "AASA100": "not-an-association-file",
        "AASA110": "detail-without-app-id",
        "AASA111": "app-id-and-app-ids",
        "AASA120": "paths-and-components",
        "AASA122": "apps-not-empty",
        "AASA130": "app-id-invalid",
        "AASA141": "variable-in-value",
        "AASA142": "undefined-variable",
        "AASA150": "query-value-not-string",
        "AASA151": "unterminated-variable",
        "AASA180": "empty-component",
        "AASA190": "unreachable-rule",
        "AASA193": "empty-details",
    ]

    @Test func conformanceValidationCases() throws {
        let data = try Data(contentsOf: TestPaths.conformanceCases)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let cases = try #require(root["validation"] as? [[String: Any]])
        #expect(cases.count >= 13)
        for c in cases {
            let name = c["name"] as? String ?? "?"
            let expected = try #require(c["expectCodes"] as? [String], "\(name)")
            let aasa = try #require(c["aasa"], "\(name)")
            let bytes = Array(try JSONSerialization.data(withJSONObject: aasa, options: [.sortedKeys]))
            let findings = AASALinter.lint(bytes)
            if expected.isEmpty {
                #expect(findings.isEmpty, "\(name): \(findings.map(\.code))")
            }
            for theirs in expected {
                let ours = try #require(Self.conformanceCodes[theirs], "\(name): no mapping for \(theirs)")
                #expect(findings.contains { $0.code == ours }, "\(name): expected \(ours) for \(theirs), got \(findings.map(\.code))")
            }
        }
    }

    /// Files built to make lint quadratic stay within a bound (diagnose lints what a server
    /// sends): one app listed by 2,300 details after a detail of 4,000 rules took 82 s, and
    /// references to many undefined names among many variables 187 s (debug builds). The
    /// bound is a hang bound, far above what either takes now.
    @Test func hostileFilesLintInBoundedTime() {
        let app = Self.app
        let rules = (0..<3000).map { #"{"/":"/a\#($0)"}"# }.joined(separator: ",")
        let repeats = Array(repeating: #"{"appID":"\#(app)","paths":["/x"]}"#, count: 1500).joined(separator: ",")
        let quadratic = #"{"applinks":{"details":[{"appIDs":["\#(app)"],"components":[\#(rules)]},\#(repeats)]}}"#
        var started = ContinuousClock.now
        let findings = AASALinter.lint(Array(quadratic.utf8))
        #expect(findings.filter { $0.code == "duplicate-app-id" }.count == 1500)
        #expect(ContinuousClock.now - started < .seconds(30))

        let variables = (0..<2000).map { #""v\#($0)":["x"]"# }.joined(separator: ",")
        let references = (0..<1500).map { #"{"/":"/$(q\#($0))"}"# }.joined(separator: ",")
        let undefined = #"{"applinks":{"substitutionVariables":{\#(variables)},"details":[{"appIDs":["\#(app)"],"components":[\#(references)]}]}}"#
        started = ContinuousClock.now
        let named = AASALinter.lint(Array(undefined.utf8)).filter { $0.code == "undefined-variable" }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(named.count == 1500)
        // Suggestions for the first 64 names only.
        #expect(named.prefix(64).allSatisfy { $0.message.contains("did you mean") }, "\(named.first?.message ?? "")")
        #expect(named.dropFirst(64).allSatisfy { !$0.message.contains("did you mean") })
    }

    /// Real app IDs that hold a placeholder word as part of a name are not placeholders (`todo`,
    /// `todolist`, `somePrefix` were errors); an unknown top-level key is ignored whatever it
    /// holds (a string was an error asking for an "apps" array).
    @Test func realNamesAndUnknownKeysAreNotErrors() {
        for id in ["ABCDE12345.com.example.todo", "ABCDE12345.com.example.todolist", "ABCDE12345.com.somePrefix.app", "ABCDE12345.com.fixme-tools.app"] {
            let findings = AASALinter.lint(Array(Self.paths(#""*""#).replacingOccurrences(of: Self.app, with: id).utf8))
            #expect(!findings.contains { $0.severity == .error }, "\(id): \(findings.map(\.code))")
        }
        let comment = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a"}]}]},"comment":"managed by ops","version":2}"#
        let findings = AASALinter.lint(Array(comment.utf8))
        #expect(findings.map(\.code).sorted() == ["unknown-service", "unknown-service"], "\(findings.map(\.code))")
    }
}
