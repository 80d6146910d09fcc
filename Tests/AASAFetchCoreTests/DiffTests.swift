import AASAFetchCore
import Testing

struct DiffTests {
    func doc(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> AASADocument {
        try #require(AASADecoder.decode(Array(text.utf8)).document, sourceLocation: sourceLocation)
    }

    func diff(_ old: String, _ new: String) throws -> [AASAChange] {
        AASADiff.changes(from: try doc(old), to: try doc(new))
    }

    /// The value of the first component of an applinks file with these components.
    func component(_ json: String) throws -> ComponentValue {
        let document = try doc(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":["# + json + "]}]}}")
        return ComponentValue(try #require(document.applinks?.details.first?.components?.first))
    }

    @Test func formattingKeyOrderCommentsAndDetailsFormAreIgnored() throws {
        let a = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","components":[{"/":"/x","comment":"one","?":{"b":"2","a":"1"}}]}]}}"#
        let b = """
            {
              "applinks": {
                "details": [
                  { "components": [ { "?": {"a": "1", "b": "2"}, "comment": "two", "/": "/x" } ],
                    "appIDs": ["ABCDE12345.a.b"] }
                ]
              }
            }
            """
        #expect(try diff(a, b).isEmpty)
        let dictionary = #"{"applinks":{"apps":[],"details":{"ABCDE12345.a.b":{"paths":["/p/*"]}}}}"#
        let array = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["/p/*"]}]}}"#
        #expect(try diff(dictionary, array).isEmpty)
        // Ignored paths (components present) do not count.
        let withPaths = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["/old"],"components":[{"/":"/x","?":{"a":"1","b":"2"}}]}]}}"#
        #expect(try diff(a, withPaths).isEmpty)
    }

    /// Patterns compare as the matcher reads them: slashes around a path do not count, and a `?`
    /// or `#` of `*` (or a path of `/*`) is the same as none. A real change still shows.
    @Test func patternsThatMatchTheSameCompareEqual() throws {
        func file(_ components: String) -> String {
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":["# + components + "]}]}}"
        }
        #expect(try diff(file(#"{"/":"/a/*"}"#), file(##"{"/":"/a/*","?":"*","#":"*"}"##)).isEmpty)
        #expect(try diff(file(#"{"/":"/a/*"}"#), file(#"{"/":"/a/*/"}"#)).isEmpty)
        #expect(try diff(file(#"{"/":"/a/*"}"#), file(#"{"/":"a/*"}"#)).isEmpty)
        #expect(try diff(file(#"{"/":"/*","exclude":true}"#), file(#"{"/":"*","exclude":true}"#)).isEmpty)
        #expect(try diff(file(#"{"/":"/*","exclude":true}"#), file(#"{"exclude":true}"#)).isEmpty)
        #expect(try diff(file(#"{"/":"/a/*"}"#), file(#"{"/":"/a/?"}"#)).count == 1)
        #expect(try diff(file(#"{"/":"/a/*"}"#), file(#"{"/":"/a/*","?":"x=*"}"#)).count == 1)
    }

    @Test func servicesAddedAndRemoved() throws {
        let changes = try diff(
            #"{"applinks":{"details":[]},"activitycontinuation":{"apps":["ABCDE12345.a.b"]}}"#,
            #"{"applinks":{"details":[]},"webcredentials":{"apps":["ABCDE12345.a.b","ABCDE12345.a.c"]}}"#)
        #expect(
            changes == [
                AASAChange(
                    kind: "service-added", service: .webcredentials, description: "service webcredentials added with 2 app IDs",
                    after: .strings(["ABCDE12345.a.b", "ABCDE12345.a.c"])),
                AASAChange(
                    kind: "service-removed", service: .activitycontinuation,
                    description: "service activitycontinuation removed (it listed 1 app ID)", before: .strings(["ABCDE12345.a.b"])),
            ])
        #expect(changes[0].afterText == "ABCDE12345.a.b\nABCDE12345.a.c")
    }

    @Test func appsAddedAndRemovedPerService() throws {
        let changes = try diff(
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b","ABCDE12345.a.z"],"paths":["*"]}]},"webcredentials":{"apps":["ABCDE12345.w.1"]}}"#,
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.c","ABCDE12345.a.b"],"paths":["*"]}]},"webcredentials":{"apps":["ABCDE12345.w.2"]}}"#)
        #expect(changes.map { "\($0.kind) \($0.service?.name ?? "") \($0.appID ?? "")" } == [
            "app-removed applinks ABCDE12345.a.z",
            "app-added applinks ABCDE12345.a.c",
            "app-removed webcredentials ABCDE12345.w.1",
            "app-added webcredentials ABCDE12345.w.2",
        ])
    }

    @Test func rulesChangedShowsRemovedAndAddedRules() throws {
        let old = ##"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"#":"no","exclude":true},{"/":"/buy/*"},{"/":"/help/*"}]}]}}"##
        let new = ##"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"#":"no","exclude":true},{"/":"/shop/*","caseSensitive":false},{"/":"/help/*"},{"?":"x=1"}]}]}}"##
        let changes = try diff(old, new)
        let buy = try component(#"{"/":"/buy/*"}"#)
        let shop = try component(#"{"/":"/shop/*","caseSensitive":false}"#)
        let query = try component(#"{"?":"x=1"}"#)
        #expect(
            changes == [
                AASAChange(
                    kind: "rules-changed", service: .applinks, appID: "ABCDE12345.a.b",
                    description: "applinks rules for ABCDE12345.a.b changed: 2 added, 1 removed (3 → 4 rules)",
                    before: .rules([RuleValue(position: 2, component: buy)]),
                    after: .rules([RuleValue(position: 2, component: shop), RuleValue(position: 4, component: query)])),
            ])
        #expect(changes.first?.beforeText == #"2. {"/":"/buy/*"}"#)
        #expect(changes.first?.afterText == "2. {\"/\":\"/shop/*\",\"caseSensitive\":false}\n4. {\"?\":\"x=1\"}")
    }

    @Test func reorderingIsAChange() throws {
        let old = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["NOT /a","*"]}]}}"#
        let new = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["*","NOT /a"]}]}}"#
        let changes = try diff(old, new)
        #expect(changes.count == 1)
        #expect(changes.first?.kind == "rules-changed")
        #expect(changes.first?.before == .rules([RuleValue(position: 1, path: "NOT /a")]))
        #expect(changes.first?.after == .rules([RuleValue(position: 2, path: "NOT /a")]))
        #expect(changes.first?.beforeText == #"1. path "NOT /a""#)
        #expect(changes.first?.afterText == #"2. path "NOT /a""#)
    }

    /// A reordering of more rules than the exact comparison takes (2,100 rules, 4.4 million cells)
    /// still shows: a multiset comparison said "0 added, 0 removed" and gave no rules.
    @Test func reorderingALargeFileIsAChange() throws {
        let rules = (0..<2100).map { #"{"/":"/r\#($0)"}"# }
        func file(_ components: [String]) -> String {
            #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":["# + components.joined(separator: ",") + "]}]}}"
        }
        let moved = try diff(file(rules), file(Array(rules.dropFirst()) + [rules[0]]))
        #expect(moved.count == 1)
        guard case .rules(let out)? = moved.first?.before, case .rules(let back)? = moved.first?.after else {
            Issue.record("no rules in \(moved)")
            return
        }
        #expect(out.map(\.position) == [1] && out.first?.component?.path == "/r0", "\(out)")
        #expect(back.map(\.position) == [2100] && back.first?.component?.path == "/r0", "\(back)")
        let reversed = try diff(file(rules), file(rules.reversed()))
        guard case .rules(let removed)? = reversed.first?.before, case .rules(let added)? = reversed.first?.after else {
            Issue.record("no rules in \(reversed)")
            return
        }
        #expect(removed.count == 2099 && added.count == 2099, "one rule is kept in place")
    }

    /// Changes that change no decision are none: a query dictionary of `*` patterns (or an empty
    /// one) matches every query, and a variable's values count as a set.
    @Test func queryDictionariesOfWildcardsAndReorderedValuesChangeNothing() throws {
        let old = #"{"applinks":{"substitutionVariables":{"v":["a","b"]},"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/$(v)"},{"/":"/x"}]}]}}"#
        let new = #"{"applinks":{"substitutionVariables":{"v":["b","a","a"]},"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/$(v)","?":{"x":"*"}},{"/":"/x","?":{}}]}]}}"#
        let none = try diff(old, new)
        #expect(none.isEmpty, "\(none.map(\.kind))")
        let narrower = #"{"applinks":{"substitutionVariables":{"v":["a"]},"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/$(v)","?":{"x":"?*"}},{"/":"/x"}]}]}}"#
        #expect(Set(try diff(old, narrower).map(\.kind)) == ["variables-changed", "rules-changed"])
    }

    @Test func defaultsAndVariables() throws {
        let old = #"{"applinks":{"defaults":{"caseSensitive":false},"substitutionVariables":{"a":["1"],"gone":["x"]},"details":[{"appID":"ABCDE12345.a.b","components":[{"/":"/x"}]}]}}"#
        let new = #"{"applinks":{"substitutionVariables":{"a":["1","2"],"new":[]},"details":[{"appID":"ABCDE12345.a.b","defaults":{"percentEncoded":false},"components":[{"/":"/x"}]}]}}"#
        let changes = try diff(old, new)
        #expect(
            changes == [
                AASAChange(
                    kind: "defaults-changed", service: .applinks, description: "applinks.defaults changed",
                    before: .defaults(DefaultsValue(caseSensitive: false)), after: .defaults(DefaultsValue())),
                AASAChange(
                    kind: "variables-changed", service: .applinks, description: "substitution variable \"a\" changed",
                    before: .strings(["1"]), after: .strings(["1", "2"])),
                AASAChange(kind: "variables-changed", service: .applinks, description: "substitution variable \"gone\" removed", before: .strings(["x"])),
                AASAChange(kind: "variables-changed", service: .applinks, description: "substitution variable \"new\" added", after: .strings([])),
                AASAChange(
                    kind: "rules-changed", service: .applinks, appID: "ABCDE12345.a.b",
                    description: "applinks rules for ABCDE12345.a.b changed: 1 added, 1 removed (1 → 1 rules)",
                    before: .rules([RuleValue(position: 1, component: try component(#"{"/":"/x","caseSensitive":false}"#))]),
                    after: .rules([RuleValue(position: 1, component: try component(#"{"/":"/x","percentEncoded":false}"#))])),
                AASAChange(
                    kind: "defaults-changed", service: .applinks, appID: "ABCDE12345.a.b", description: "detail defaults for ABCDE12345.a.b changed",
                    before: .defaultsList([DefaultsValue()]), after: .defaultsList([DefaultsValue(percentEncoded: false)])),
            ])
        // The human text of each side is what it always was.
        #expect(changes.map(\.beforeText) == [#"{"caseSensitive":false}"#, #"["1"]"#, #"["x"]"#, nil, #"1. {"/":"/x","caseSensitive":false}"#, "{}"])
        #expect(changes.map(\.afterText) == ["{}", #"["1","2"]"#, nil, "[]", #"1. {"/":"/x","percentEncoded":false}"#, #"{"percentEncoded":false}"#])
    }

    @Test func rulesSplitAcrossDetailsCompareAsOneSequence() throws {
        let split = #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","components":[{"/":"/a"}]},{"appID":"ABCDE12345.a.b","components":[{"/":"/b"}]}]}}"#
        let merged = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/a"},{"/":"/b"}]}]}}"#
        #expect(try diff(split, merged).isEmpty)
    }

    @Test func deterministicAndCodable() throws {
        let old = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.z","ABCDE12345.a","ABCDE12345.m"],"paths":["/1"]}]},"appclips":{"apps":["ABCDE12345.c"]}}"#
        let new = #"{"appclips":{"apps":["ABCDE12345.d"]},"applinks":{"details":[{"appIDs":["ABCDE12345.m","ABCDE12345.a","ABCDE12345.y"],"paths":["/2"]}]},"authsrv":{"apps":[]}}"#
        let first = try diff(old, new)
        for _ in 0..<5 { #expect(try diff(old, new) == first) }
        #expect(first.map(\.kind) == [
            "service-added",
            "app-removed", "app-added", "rules-changed", "rules-changed",
            "app-removed", "app-added",
        ])
        #expect(first.map { $0.appID ?? "" } == ["", "ABCDE12345.z", "ABCDE12345.y", "ABCDE12345.a", "ABCDE12345.m", "ABCDE12345.c", "ABCDE12345.d"])
        let encoded = try JSONEncoderHelper.encode(first)
        #expect(encoded.contains(#""kind":"service-added""#))
        #expect(encoded.contains(#""service":"authsrv""#))
        #expect(!encoded.contains(#""appID":null"#))
        // Stored history round-trips, and text recorded by earlier versions still decodes.
        #expect(try JSONDecoder().decode([AASAChange].self, from: Data(encoded.utf8)) == first)
        let legacy = #"{"kind":"rules-changed","description":"d","before":"1. {\"/\":\"/a\"}","after":"2. path \"/b\""}"#
        let decoded = try JSONDecoder().decode(AASAChange.self, from: Data(legacy.utf8))
        #expect(decoded.before == .text(#"1. {"/":"/a"}"#))
        #expect(decoded.afterText == #"2. path "/b""#)
    }

    @Test func structuredValuesAreWrittenWithEveryKey() throws {
        let old = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/a","?":{"q":"1"}}]}]}}"#
        let new = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"paths":["/b"]}]}}"#
        let text = try ReportJSONWriter(style: .compact).string(try diff(old, new))
        #expect(text.contains(##""before":[{"position":1,"component":{"/":"/a","?":{"q":"1"},"#":null,"exclude":false,"caseSensitive":null,"percentEncoded":null},"path":null}]"##))
        #expect(text.contains(#""after":[{"position":1,"component":null,"path":"/b"}]"#))
    }
}

import Foundation

enum JSONEncoderHelper {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
