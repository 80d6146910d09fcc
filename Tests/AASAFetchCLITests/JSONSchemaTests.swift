import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// Every command's real `--json` output validates against its schema in `docs/schema` (draft
/// 2020-12, `additionalProperties: false`, every key required), and a command that cannot run
/// prints the error document. The outputs come from the built binary against the nginx origins,
/// the fake CDN and the fault server of ``DiagnoseFaultMatrixTests``, files on disk and a test app.
struct JSONSchemaTests {
    typealias Document = SchemaValidator.Document
    static let appID = DiagnoseFaultMatrixTests.appID

    /// Collects documents from runs of the tool.
    final class Collector {
        var documents: [Document] = []

        /// Runs the tool; its standard output is one document of `schema` (with `lines`, one a
        /// line). Checks the exit status when given.
        @discardableResult
        func run(_ schema: String, _ arguments: [String], cache: String? = nil, status: Int32? = nil, lines: Bool = false,
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> ToolRunner.Result {
            let result = try ToolRunner.run(arguments, cache: cache)
            if let status {
                #expect(result.status == status, "\(arguments.joined(separator: " ")): \(result.stderr.suffix(600))", sourceLocation: sourceLocation)
            }
            let origin = "aasa-fetch " + arguments.filter { !$0.hasPrefix("/") && !$0.contains(":127.0.0.1:") }.joined(separator: " ")
            if lines {
                let texts = result.stdout.split(separator: "\n").map(String.init)
                #expect(!texts.isEmpty, "\(origin) printed nothing", sourceLocation: sourceLocation)
                documents += texts.map { Document(schema: schema, text: $0, origin: origin) }
            } else {
                documents.append(Document(schema: schema, text: result.stdout, origin: origin))
            }
            return result
        }
    }

    static func write(_ text: String, _ name: String, in folder: URL) throws -> String {
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test func everyCommandsOutputValidatesAgainstItsSchema() async throws {
        let fixture = try await DiagnoseFaultMatrixTests.Fixture.start()
        defer { fixture.stop() }
        let scratch = try SpooledListTests.folder("aasa-schema")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let store = scratch.appendingPathComponent("store").path
        let net = fixture.network + ["--quiet"]
        // diagnose has no progress to quiet; refresh and match have no CDN.
        let diagnoseNet = fixture.network
        var refreshNet = fixture.network
        if let base = refreshNet.firstIndex(of: "--cdn-base") { refreshNet.removeSubrange(base...(base + 1)) }
        let app = ["--app-id", Self.appID]
        let tool = Collector()

        // fetch: every kind of outcome on the origin route, the CDN route, both, unjudged, a spooled list.
        let hosts = ["approved.test", "botblock.test", "e404.test", "html.test", "bom.test", "syntax.test", "noapplinks.test",
                     "missingapp.test", "big.test", "r301.test", "legacy.test", "bomb.test", "expired.test", "never.test"]
        let entries = hosts.map { "applinks:\($0)" } + ["applinks:*.wild.test", "webcredentials:bad.test:8", "applinks:approved.test?mode=developer"]
        let domainArguments = entries.flatMap { ["--domain", $0] }
        try tool.run("fetch", net + app + domainArguments + ["--json"], cache: store, status: 1)
        try tool.run("fetch", net + app + ["--route", "cdn", "--json", "--no-store"]
            + ["applinks:approved.test", "applinks:swc101.test", "applinks:unknown.test", "applinks:stale.test", "applinks:approved.test?mode=developer"]
            .flatMap { ["--domain", $0] }, status: 1)
        try tool.run("fetch", net + app + ["--route", "both", "--json", "--no-store", "--domain", "applinks:stale.test",
                                           "--domain", "applinks:approved.test", "--domain", "applinks:swc101.test"])
        try tool.run("fetch", net + ["--domain", "applinks:approved.test", "--json", "--no-store"], status: 0)
        let list = try Self.write("approved.test\nwebcredentials:missingapp.test\n# a comment\nbad host\n", "hosts.txt", in: scratch)
        try tool.run("fetch", net + app + ["--domains", list, "--json", "--no-store"], status: 1)

        // plan
        try tool.run("plan", ["plan", "--json", "--region", "DE"] + app + domainArguments, status: 1)

        // match: a file on disk (match, exclude, no_match with the nearest rule), downloaded files, the line protocol.
        let site = TestPaths.repository.appendingPathComponent("examples/site/example.com/.well-known/apple-app-site-association").path
        try tool.run("match", ["match", "https://example.com/buy/42", "https://example.com/help/website/a", "https://example.com/other",
                               "--aasa", site, "--json"], status: 1, lines: true)
        try tool.run("match", ["match", "https://approved.test/x", "https://missingapp.test/y", "--domain", "applinks:approved.test",
                               "--domain", "applinks:missingapp.test", "--json"] + refreshNet, cache: store, status: 1, lines: true)
        let cases = try Self.write("""
            {"id": 1, "aasa": {"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/x"}]}]}}, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}
            {"id": "two", "aasa": {"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/x", "exclude": true}]}]}}, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}
            not json
            {"id": {"n": [3]}, "aasa": [], "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}

            """, "cases.jsonl", in: scratch)
        try tool.run("match-cases", ["match", "--cases", cases], status: 1, lines: true)

        // diagnose: origin (every step kind, the fault server), the CDN route, both.
        try tool.run("diagnose", ["diagnose", "--json"] + diagnoseNet + app + (hosts + ["retry.test", "reset.test"]).flatMap { ["--domain", "applinks:\($0)"] }
            + ["--domain", "applinks:approved.test?mode=developer", "--domain", "webcredentials:bad.test:8"], status: 1)
        try tool.run("diagnose", ["diagnose", "--json", "--route", "cdn"] + diagnoseNet + app
            + ["swc101.test", "approved.test", "stale.test", "unknown.test"].flatMap { ["--domain", "applinks:\($0)"] }, status: 1)
        try tool.run("diagnose", ["diagnose", "stale.test", "--json", "--route", "both"] + diagnoseNet + app)
        try tool.run("diagnose", ["diagnose", "approved.test", "--json"] + diagnoseNet, status: 0)

        // lint and diff: files with findings of every kind of location, an unreadable file, every kind of change.
        let bad = try Self.write("{\n  \"applinks\": {\"details\": [],}\n}", "bad.json", in: scratch)
        let warn = try Self.write(#"{"applinks":{"apps":["X"],"details":[{"appIDs":["ABCDE12345.a.b","ABCDE12345.a.b"],"components":[{"/":"/a"},{"/":"/a"}]}],"substitutionVariables":{"v":["1"]}},"Applinks":{}}"#,
                                  "warn.json", in: scratch)
        try tool.run("lint", ["lint", "--json", bad, warn, site, scratch.appendingPathComponent("missing.json").path], status: 2)
        let old = try Self.write(
            ##"{"applinks":{"defaults":{"caseSensitive":false},"substitutionVariables":{"a":["1"],"gone":["x"]},"details":[{"appIDs":["ABCDE12345.a.b","ABCDE12345.a.z"],"components":[{"/":"/buy/*"},{"/":"/help/*","?":{"q":"1"},"#":"f","exclude":true}]},{"appID":"ABCDE12345.a.c","paths":["/old/*"]}]},"activitycontinuation":{"apps":["ABCDE12345.a.b"]}}"##,
            "old.json", in: scratch)
        let new = try Self.write(
            #"{"applinks":{"substitutionVariables":{"a":["1","2"],"new":[]},"details":[{"appIDs":["ABCDE12345.a.b","ABCDE12345.a.y"],"defaults":{"percentEncoded":false},"components":[{"/":"/shop/*","caseSensitive":false},{"?":"x=1"}]},{"appID":"ABCDE12345.a.c","paths":["/new/*"]}]},"webcredentials":{"apps":["ABCDE12345.a.b"]}}"#,
            "new.json", in: scratch)
        let diff = try tool.run("diff", ["diff", "--json", old, new], status: 1)
        let kinds = Set((try diff.json()["changes"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String })
        #expect(kinds == ["service-added", "service-removed", "app-added", "app-removed", "rules-changed", "defaults-changed", "variables-changed"])
        try tool.run("diff", ["diff", "--json", old, old], status: 0)

        // entitlements: an .ipa with its profile, compared with a project file.
        let ipa = scratch.appendingPathComponent("Demo.ipa")
        try Data(try AppFixtures.deflatedZip(AppFixtures.ipaEntries(executable: AppFixtures.signedExecutable(), profile: try AppFixtures.profile())))
            .write(to: ipa)
        let project = scratch.appendingPathComponent("Other.entitlements")
        try Data(AppFixtures.xmlPlist([
            "application-identifier": .string("ABCDE12345.com.example.demo"),
            "com.apple.developer.associated-domains": .array([.string("applinks:example.com"), .string("applinks:new.example.com")]),
        ])).write(to: project)
        try tool.run("entitlements", ["entitlements", ipa.path, "--json"], status: 0)
        try tool.run("entitlements", ["entitlements", ipa.path, "--compare", project.path, "--json"], status: 1)

        // refresh: the store of the first run, every host due; one site's file changed meanwhile.
        try Data(DiagnoseFaultMatrixTests.older.utf8).write(to: fixture.root.appendingPathComponent("approved.test/.well-known/apple-app-site-association"))
        let later = String(Int(Date().timeIntervalSince1970) + 3 * 86400)
        let refresh = try tool.run("refresh", ["refresh", "--json", "--now", later] + refreshNet, cache: store, status: 0)
        let events = (try refresh.json()["hosts"] as? [[String: Any]] ?? []).flatMap { $0["events"] as? [[String: Any]] ?? [] }
        let changed = try #require(events.first { $0["kind"] as? String == "changed" }, "\(refresh.stdout)")
        let change = try #require((changed["changes"] as? [[String: Any]])?.first)
        #expect(((change["before"] as? [[String: Any]])?.first?["component"] as? [String: Any])?["/"] as? String == "/*")
        #expect(changed["appID"] is NSNull)
        try tool.run("refresh", ["refresh", "--json", "--now", later] + refreshNet, cache: store, status: 0)

        // show, export, forget.
        try tool.run("show", ["show", "--json"], cache: store, status: 0)
        let show = try tool.run("show", ["show", "approved.test", "--json"], cache: store, status: 0)
        let history = try #require((try show.json()["hosts"] as? [[String: Any]])?.first?["history"] as? [[String: Any]])
        #expect(history.map { $0["kind"] as? String } == ["approved", "changed"])
        // The kept approved files (two: the file changed) and the stored diff between them.
        let versions = try tool.run("show", ["show", "approved.test", "--versions", "--json"], cache: store, status: 0)
        #expect((try versions.json()["hosts"] as? [[String: Any]])?.first?["versions"].flatMap { $0 as? [[String: Any]] }?.count == 2)
        try tool.run("diff", ["diff", "--stored", "approved.test@-1", "approved.test", "--json"], cache: store, status: 1)
        let unknown = try tool.run("error", ["diff", "--stored", "approved.test@-2", "approved.test", "--json"], cache: store, status: 2)
        #expect((try unknown.json()["error"] as? [String: Any])?["code"] as? String == "version-unknown")
        try tool.run("export", ["export", "--json", "--out", scratch.appendingPathComponent("export").path], cache: store, status: 0)
        let page = scratch.appendingPathComponent("status.html").path
        let report = try tool.run("report", ["report", "--html", page, "--json"], cache: store, status: 0)
        #expect(try report.json()["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: page)[.size] as? Int))
        try tool.run("forget", ["forget", "approved.test", "--json"], cache: store, status: 0)
        try tool.run("forget", ["forget", "approved.test", "--json"], cache: store, status: 1)

        // Commands that cannot run: the error document, with the same line on standard error.
        let nowhere = scratch.appendingPathComponent("no-store").path
        let failures: [(arguments: [String], code: String, status: Int32, lines: Bool)] = [
            (["lint", "--json"], "usage", 64, false),
            (["match", "https://a.test/", "--json"], "usage", 64, true),
            (["match", "--cases", "-", "--aasa", bad], "usage", 64, true),
            (["refresh", "--json", "--worker", "--watch"], "usage", 64, true),
            (["--json", "--domain", "applinks:a.test", "--concurrency", "0"], "usage", 64, false),
            (["diff", "--json", old, bad], "invalid-json", 2, false),
            (["--json", "--entitlements", scratch.appendingPathComponent("nope.entitlements").path], "entitlements-unreadable", 2, false),
            (["show", "--json"], "store-missing", 2, false),
            (["report", "--html", "-", "--json"], "usage", 64, false),
            (["report", "--html", scratch.appendingPathComponent("x.html").path, "--json"], "store-missing", 2, false),
            (["refresh", "--json", "--watch"], "store-missing", 2, true),
            (["match", "--cases", scratch.appendingPathComponent("nope.jsonl").path], "file-unreadable", 2, true),
            (["match", "https://a.test/", "--aasa", bad, "--json"], "invalid-json", 2, true),
            (["entitlements", bad, "--json"], "macho-not-macho", 2, false),
        ]
        for failure in failures {
            let result = try tool.run("error", failure.arguments, cache: nowhere, status: failure.status, lines: failure.lines)
            let stderr = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
            #expect(stderr.hasPrefix("aasa-fetch: \(failure.code): "), "\(failure.arguments): \(result.stderr)")
            let document = try result.json()
            #expect((document["error"] as? [String: Any])?["code"] as? String == failure.code, "\(failure.arguments): \(result.stdout)")
            #expect(stderr == "aasa-fetch: \(failure.code): \((document["error"] as? [String: Any])?["message"] as? String ?? "?")")
        }

        let problems = try SchemaValidator.problems(in: tool.documents)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        // Every schema is exercised.
        let names = try FileManager.default.contentsOfDirectory(atPath: SchemaValidator.schemaFolder.path)
            .filter { $0.hasSuffix(".schema.json") && $0 != "common.schema.json" }.map { String($0.dropLast(".schema.json".count)) }
        // The webhook's body (not a command's output) is checked by notificationEventsMatchTheirSchema.
        #expect(Set(tool.documents.map(\.schema)).union(["notification"]) == Set(names))
    }

    /// The schemas are strict: a key too many, a key missing, a date in another form, a value of
    /// the wrong type or a document whose first key is not `schemaVersion` all fail.
    @Test func schemasCatchDrift() throws {
        let good = #"{"schemaVersion": 1, "host": "a.test", "removed": 1}"#
        let documents = [
            Document(schema: "forget", text: good, origin: "good"),
            Document(schema: "forget", text: #"{"schemaVersion": 1, "host": "a.test", "removed": 1, "extra": true}"#, origin: "extra"),
            Document(schema: "forget", text: #"{"schemaVersion": 1, "host": "a.test"}"#, origin: "missing"),
            Document(schema: "forget", text: #"{"host": "a.test", "schemaVersion": 1, "removed": 1}"#, origin: "order"),
            Document(schema: "forget", text: #"{"schemaVersion": 2, "host": "a.test", "removed": 1}"#, origin: "version"),
            Document(schema: "export", text: #"{"schemaVersion": 1, "out": "x", "files": [{"host": "a", "route": "origin", "path": "p", "bytes": 1, "approvedAt": "2026-11-23 18:00:00"}]}"#,
                     origin: "date"),
            Document(schema: "export", text: #"{"schemaVersion": 1, "out": "x", "files": [{"host": "a", "route": "origin", "path": "p", "bytes": 1, "approvedAt": 1795456800}]}"#,
                     origin: "number date"),
            Document(schema: "error", text: #"{"schemaVersion": 1, "error": {"code": "Usage Error", "message": "m"}}"#, origin: "code"),
            Document(schema: "lint", text: #"{"schemaVersion": 1, "errors": 0, "warnings": 0, "infos": 0, "unreadable": 0, "files": [{"path": "p", "size": null, "errors": 0, "warnings": 0, "infos": 0, "findings": [{"code": "x", "severity": "error", "message": "m", "location": "1:2", "line": "1", "column": 2, "fix": null}], "readError": null}]}"#,
                     origin: "line as text"),
        ]
        let problems = try SchemaValidator.problems(in: documents)
        #expect(problems.map { String($0.prefix { $0 != ":" }) } == ["extra", "missing", "order", "version", "date", "number date", "code", "line as text"],
                "\(problems.joined(separator: "\n"))")
    }
}
