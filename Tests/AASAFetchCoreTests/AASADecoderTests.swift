import AASAFetchCore
import Testing

struct AASADecoderTests {
    func decode(_ text: String) -> AASADecodeResult { AASADecoder.decode(Array(text.utf8)) }

    func document(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (AASADocument, [Finding]) {
        let result = decode(text)
        let document = try #require(result.document, "\(result)", sourceLocation: sourceLocation)
        return (document, result.findings)
    }

    @Test func modernDocument() throws {
        let (doc, findings) = try document(
            #"""
            {
              "applinks": {
                "defaults": {"caseSensitive": false},
                "substitutionVariables": {"food": ["pizza", "sushi"]},
                "details": [
                  {
                    "appIDs": ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"],
                    "defaults": {"percentEncoded": false},
                    "components": [
                      {"#": "no_universal_links", "exclude": true, "comment": "hash"},
                      {"/": "/buy/*", "caseSensitive": true, "percentEncoded": true},
                      {"/": "/help/*", "?": {"articleNumber": "????", "lang": "$(lang)"}},
                      {"?": "a=*"}
                    ]
                  }
                ]
              },
              "webcredentials": {"apps": ["ABCDE12345.com.example.app"]},
              "appclips": {"apps": ["ABCDE12345.com.example.app.Clip"]}
            }
            """#)
        #expect(findings.isEmpty)
        #expect(doc.services == [.applinks, .webcredentials, .appclips])
        #expect(doc.serviceApps[.webcredentials] == ["ABCDE12345.com.example.app"])
        #expect(doc.appIDs(for: .appclips) == ["ABCDE12345.com.example.app.Clip"])
        let applinks = try #require(doc.applinks)
        #expect(applinks.defaults == ComponentDefaults(caseSensitive: false))
        #expect(applinks.substitutionVariables == ["food": ["pizza", "sushi"]])
        #expect(applinks.legacyApps == nil)
        #expect(!applinks.detailsIsDictionary)
        let detail = try #require(applinks.details.first)
        #expect(detail.location == "/applinks/details/0")
        #expect(detail.appIDs == ["ABCDE12345.com.example.app", "ABCDE12345.com.example.app2"])
        #expect(detail.defaults == ComponentDefaults(percentEncoded: false))
        let rules = try #require(detail.components)
        #expect(
            rules == [
                ComponentRule(fragment: "no_universal_links", exclude: true, comment: "hash", location: "/applinks/details/0/components/0"),
                ComponentRule(
                    path: "/buy/*", options: ComponentDefaults(caseSensitive: true, percentEncoded: true),
                    location: "/applinks/details/0/components/1"),
                ComponentRule(
                    path: "/help/*",
                    query: .items([QueryItemPattern(name: "articleNumber", pattern: "????"), QueryItemPattern(name: "lang", pattern: "$(lang)")]),
                    location: "/applinks/details/0/components/2"),
                ComponentRule(query: .string("a=*"), location: "/applinks/details/0/components/3"),
            ])
    }

    @Test func legacyDetailsDictionary() throws {
        let (doc, findings) = try document(
            #"{"applinks":{"apps":[],"details":{"ABCDE12345.com.a":{"paths":["/x/*","NOT /y"]},"ABCDE12345.com.b/c":{"paths":["*"]}}}}"#)
        let applinks = try #require(doc.applinks)
        #expect(applinks.detailsIsDictionary)
        #expect(applinks.legacyApps == [])
        #expect(applinks.details.map(\.appIDs) == [["ABCDE12345.com.a"], ["ABCDE12345.com.b/c"]])
        #expect(applinks.details.map(\.location) == ["/applinks/details/ABCDE12345.com.a", "/applinks/details/ABCDE12345.com.b~1c"])
        #expect(applinks.details[0].paths == ["/x/*", "NOT /y"])
        #expect(applinks.details[0].components == nil)
        #expect(findings.map(\.code) == ["legacy-details-dictionary"])
        #expect(findings[0].severity == .warning)
        #expect(findings[0].location == "/applinks/details")
        #expect(findings[0].message.hasSuffix("(line 1, column 34)"))
    }

    @Test(arguments: [
        (#"{"appIDs":["ABCDE12345.a.b"],"appID":"ABCDE12345.c.d","paths":["*"]}"#, ["ABCDE12345.a.b"]),
        (#"{"appIDs":[],"appID":"ABCDE12345.c.d","paths":["*"]}"#, []),
        (#"{"appID":"ABCDE12345.c.d","paths":["*"]}"#, ["ABCDE12345.c.d"]),
        (#"{"appIDs":"ABCDE12345.a.b","appID":"ABCDE12345.c.d","paths":["*"]}"#, ["ABCDE12345.c.d"]),
        (#"{"paths":["*"]}"#, []),
        (#"{"appIDs":["ABCDE12345.a.b",7,"ABCDE12345.e.f"],"paths":["*"]}"#, ["ABCDE12345.a.b", "ABCDE12345.e.f"]),
    ])
    func appIDsWinOverAppID(detail: String, expected: [String]) throws {
        let (doc, _) = try document(#"{"applinks":{"details":["# + detail + "]}}")
        #expect(doc.applinks?.details.first?.appIDs == expected)
    }

    @Test func pathsKeptBesideComponents() throws {
        let (doc, _) = try document(#"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","paths":["/old/*"],"components":[]}]}}"#)
        let detail = try #require(doc.applinks?.details.first)
        #expect(detail.paths == ["/old/*"])
        #expect(detail.components == [])
    }

    @Test func queryDictionaryWithNonStringIsIgnored() throws {
        let (doc, findings) = try document(
            #"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","components":[{"/":"/p","?":{"a":"1","f":true}}]}]}}"#)
        #expect(doc.applinks?.details.first?.components?.first?.query == .ignored)
        #expect(doc.applinks?.details.first?.components?.first?.path == "/p")
        #expect(findings.map(\.code) == ["query-value-not-string"])
        #expect(findings.first?.location == "/applinks/details/0/components/0/?/f")
        #expect(findings.first?.severity == .error)
    }

    @Test func wrongTypesAreDroppedWithFindings() throws {
        let (doc, findings) = try document(
            #"""
            {"applinks": {
              "apps": "none",
              "defaults": [],
              "substitutionVariables": {"a": "x", "b": ["1", 2]},
              "details": [
                "nope",
                {"appID": 5, "appIDs": ["ABCDE12345.a.b"], "paths": "*",
                 "components": [{"/": 1, "#": null, "?": 3, "exclude": "true", "comment": 9, "caseSensitive": "no"}, 4]}
              ]
            },
            "webcredentials": ["ABCDE12345.a.b"],
            "appclips": {"apps": [1]}}
            """#)
        let applinks = try #require(doc.applinks)
        #expect(applinks.legacyApps == [])
        #expect(applinks.defaults == nil)
        #expect(applinks.substitutionVariables == ["b": ["1"]])
        #expect(applinks.details.count == 1)
        let detail = applinks.details[0]
        #expect(detail.location == "/applinks/details/1")
        #expect(detail.appIDs == ["ABCDE12345.a.b"])
        #expect(detail.paths == nil)
        #expect(detail.components == [ComponentRule(location: "/applinks/details/1/components/0")])
        #expect(doc.serviceApps[.webcredentials] == nil)
        #expect(doc.serviceApps[.appclips] == [])
        let located = findings.map { "\($0.code) \($0.location ?? "-")" }
        #expect(
            located == [
                "wrong-type /applinks/apps",
                "wrong-type /applinks/defaults",
                "wrong-type /applinks/substitutionVariables/a",
                "wrong-type /applinks/substitutionVariables/b/1",
                "wrong-type /applinks/details/0",
                "wrong-type /applinks/details/1/paths",
                "wrong-type /applinks/details/1/components/0/~1",
                "wrong-type /applinks/details/1/components/0/#",
                "wrong-type /applinks/details/1/components/0/?",
                "exclude-not-boolean /applinks/details/1/components/0/exclude",
                "wrong-type /applinks/details/1/components/0/comment",
                "wrong-type /applinks/details/1/components/0/caseSensitive",
                "wrong-type /applinks/details/1/components/1",
                "wrong-type /webcredentials",
                "wrong-type /appclips/apps/0",
            ])
        #expect(findings.allSatisfy { $0.fix != nil })
        #expect(findings[0].message.hasSuffix("(line 2, column 11)"))
    }

    @Test func bomAndUnknownService() throws {
        let result = AASADecoder.decode([0xEF, 0xBB, 0xBF] + Array(#"{"applinks":{"details":[]},"appLinks":{},"authsrv":{"apps":[]}}"#.utf8))
        let doc = try #require(result.document)
        #expect(doc.services == [.applinks, .unknown("appLinks"), .authsrv])
        #expect(result.findings.map(\.code) == ["bom", "unknown-service"])
        #expect(result.findings[1].message.contains("did you mean \"applinks\""))
        #expect(result.findings[1].location == "/appLinks")
        #expect(result.code == "ok")
    }

    @Test func duplicateKeysLastWins() throws {
        let (doc, _) = try document(#"{"applinks":{"details":[{"appID":"ABCDE12345.a.b","appID":"ABCDE12345.c.d","paths":["*"]}]}}"#)
        #expect(doc.applinks?.details.first?.appIDs == ["ABCDE12345.c.d"])
    }

    @Test(arguments: [
        ("{}", "the top-level object is empty: it names no service"),
        ("[]", "the top level is an array, not an object of services"),
        ("\"applinks\"", "the top level is a string, not an object of services"),
        (#"{"Applinks":{},"foo":1}"#, #"the top-level object names no documented service (found "Applinks", "foo")"#),
    ])
    func notAnAssociationFile(text: String, reason: String) {
        let result = decode(text)
        guard case .notAnAssociationFile(let r, let findings) = result else {
            Issue.record("expected notAnAssociationFile, got \(result)")
            return
        }
        #expect(r == reason)
        #expect(findings.last?.code == "not-an-association-file")
        #expect(findings.last?.severity == .error)
        #expect(result.document == nil)
        #expect(result.code == "not-an-association-file")
    }

    @Test func htmlIsInvalidJSON() {
        let result = decode("\n\n<!DOCTYPE html>\n<html></html>")
        guard case .invalidJSON(let error, let findings) = result else {
            Issue.record("expected invalidJSON, got \(result)")
            return
        }
        #expect(error.line == 3)
        #expect(error.column == 1)
        #expect(findings.count == 1)
        #expect(findings[0].code == "invalid-json")
        #expect(findings[0].location == "3:1")
        #expect(findings[0].message.hasPrefix("invalid JSON at line 3, column 1: "))
        #expect(result.code == "invalid-json")
    }

    @Test func applinksOfWrongTypeStillAssociationFile() throws {
        let (doc, findings) = try document(#"{"applinks":[],"webcredentials":{"apps":["ABCDE12345.a.b"]}}"#)
        #expect(doc.applinks == nil)
        #expect(doc.services == [.applinks, .webcredentials])
        #expect(findings.map(\.code) == ["wrong-type"])
        #expect(doc.appIDs(for: .applinks) == [])
    }
}
