@testable import AASAFetchCLI
@testable import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `--format github|sarif|junit`: the writers' escaping with hostile text, entry lines, the code
/// catalogue, and the real binary on `fetch`, `lint` and `diagnose` against the example sites,
/// SARIF validated against OASIS's SARIF 2.1.0 schema and JUnit parsed by python3's `xml.etree`.
struct CIFormatTests {
    static let entitlements = ExampleSites.examples.appendingPathComponent("Example.entitlements").path
    static let site = ExampleSites.examples.appendingPathComponent("site").path

    /// The 1-based line of the first line of `path` that contains `text`.
    static func line(of text: String, in path: String) throws -> Int {
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        return try #require(lines.firstIndex { $0.contains(text) }) + 1
    }

    // MARK: - Writers

    @Test func gitHubEscapesDataAndPropertiesAsTheToolkitDoes() {
        #expect(GitHubWriter.escapeData("100% a\r\nb:c,d") == "100%25 a%0D%0Ab:c,d")
        // Control characters from a server are escaped as in human output (the log viewer renders ANSI).
        #expect(GitHubWriter.escapeData("x\u{1B}]8;;http://e\u{07}y\u{1B}[2J\u{9B}\u{202E}\tz") == "x\\x1B]8;;http://e\\x07y\\x1B[2J\\x9B\\u{202E}\\tz")
        #expect(GitHubWriter.escapeProperty("a\u{1B}:b") == "a\\x1B%3Ab")
        #expect(GitHubWriter.escapeProperty("100% a\r\nb:c,d") == "100%25 a%0D%0Ab%3Ac%2Cd")
        // A message that tries to end the command and start another, and a file name with the separators.
        let hostile = CIProblem(
            code: "x,y:z", severity: .warning, message: "one\n::error file=evil.txt::forged\r%0A",
            fix: "do\nthis", location: CILocation(file: "dir,1/a:b.entitlements", line: 3, column: 7))
        let line = GitHubWriter.line(hostile)
        #expect(line == "::warning file=dir%2C1/a%3Ab.entitlements,line=3,col=7,title=x%2Cy%3Az::one%0A::error file=evil.txt::forged%0D%250A (fix: do%0Athis)\n")
        #expect(line.unicodeScalars.filter { $0 == "\n" || $0 == "\r" }.count == 1)
        // Severities, and no file: no line either.
        let plain = CIProblem(code: "c", severity: .info, message: "m", fix: nil, location: CILocation(file: nil, line: 4, column: 2))
        #expect(GitHubWriter.line(plain) == "::notice title=c::m\n")
    }

    @Test func junitEscapesEveryCharacterXMLForbidsAndParses() throws {
        let hostile = "a\u{0}b\u{1B}[31mc<&>\"'\u{FFFE}\u{7F}\u{85}\td\ne\rf]]>"
        var text = ""
        var writer: any CIWriter = JUnitWriter { text += $0 }
        writer.begin(command: "fetch")
        writer.loose([CIProblem(code: "entitlements-empty", severity: .warning, message: hostile, fix: nil, location: CILocation())])
        writer.suite(hostile, [
            CICase(suite: hostile, name: hostile, outcome: .failed(code: hostile), time: 1.5, problems: [
                CIProblem(code: hostile, severity: .error, message: hostile, fix: hostile, location: CILocation(file: hostile, line: 1)),
            ]),
            CICase(suite: hostile, name: "skipped", outcome: .skipped(hostile), time: nil, problems: []),
            CICase(suite: hostile, name: "error", outcome: .error(code: "file-unreadable"), time: nil, problems: []),
            CICase(suite: hostile, name: "passed", outcome: .passed, time: nil, problems: []),
        ])
        writer.finish(summary: hostile)
        let parsed = try CIFormatValidator.junit([text])[0]
        #expect(parsed["problems"] as? [String] == [], "\(parsed)")
        let suites = try #require(parsed["suites"] as? [[String: Any]])
        #expect(suites.map { $0["name"] as? String } == ["run", "a\\u{0}b\\u{1B}[31mc<&>\"'\\u{FFFE}\u{7F}\u{85}\td\ne\rf]]>"])
        let cases = try #require(suites[1]["cases"] as? [[String: Any]])
        let escaped = "a\\u{0}b\\u{1B}[31mc<&>\"'\\u{FFFE}\u{7F}\u{85}\td\ne\rf]]>"
        #expect(cases[0]["name"] as? String == escaped)
        let failure = try #require(cases[0]["failure"] as? [String: Any])
        #expect(failure["type"] as? String == escaped)
        #expect((failure["text"] as? String)?.contains("fix: \(escaped)") == true)
        #expect(cases[1]["skipped"] as? String == escaped)
        #expect((cases[2]["error"] as? [String: Any])?["type"] as? String == "file-unreadable")
        #expect(suites[1]["failures"] as? Int == 1 && suites[1]["skipped"] as? Int == 1 && suites[1]["errors"] as? Int == 1)
    }

    /// The SARIF check can fail: a log without a driver name, with a line 0 and an unknown level.
    @Test func theSARIFSchemaRefusesABrokenLog() throws {
        let broken = #"{"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": [{"message": {"text": "m"}, "level": "fatal", "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a"}, "region": {"startLine": 0}}}]}]}]}"#
        let problems = try CIFormatValidator.sarifProblems([broken])[0]
        #expect(problems.contains { $0.contains("'name' is a required property") }, "\(problems)")
        #expect(problems.contains { $0.contains("fatal") }, "\(problems)")
        #expect(problems.contains { $0.contains("startLine") || $0.contains("minimum") }, "\(problems)")
    }

    // MARK: - Lines and codes

    @Test func theLinesOfAnXMLEntitlementsArray() throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.entitlements)))
        #expect(PlistXMLLines.elementLines(ofArrayFor: EntitlementsFile.associatedDomainsKey, in: bytes) == Array(9...16))
        let file = try EntitlementsFile.read(path: Self.entitlements)
        #expect(file.associatedDomainLines == Array(9...16))

        // Comments, CDATA, a nested dictionary with the same key, a self-closing element, an
        // attribute holding '>' and CRLF line ends.
        let tricky = """
            <?xml version="1.0" encoding="UTF-8"?>\r
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
            <!-- <key>com.apple.developer.associated-domains</key><array><string>x</string></array> -->
            <key>nested</key><dict><key>com.apple.developer.associated-domains</key><array><string>no</string></array></dict>
            <key>flag</key><true/>
            <key>com.apple.developer.<![CDATA[associated-domains]]></key>
            <array>
              <string>applinks:a.example</string><string>applinks:b.example</string>
              <string><![CDATA[applinks:c.example
            ]]></string>
              <string a=">">applinks:d.example</string>
            </array>
            </dict></plist>
            """
        #expect(PlistXMLLines.elementLines(ofArrayFor: EntitlementsFile.associatedDomainsKey, in: Array(tricky.utf8)) == [9, 9, 10, 12])
        let parsed = try EntitlementsFile.parse(Data(tricky.utf8))
        #expect(parsed.associatedDomains.count == 4)
        #expect(parsed.associatedDomainLines == [9, 9, 10, 12])
        let empty = "<plist><dict><key>com.apple.developer.associated-domains</key><array/></dict></plist>"
        #expect(PlistXMLLines.elementLines(ofArrayFor: EntitlementsFile.associatedDomainsKey, in: Array(empty.utf8)) == [])
        // The key twice: which array the parser keeps is not the scanner's to guess (the first
        // one's lines were given to the second one's entries): no lines.
        let twice = "<plist><dict><key>com.apple.developer.associated-domains</key><array><string>applinks:a.example</string></array>\n"
            + "<key>com.apple.developer.associated-domains</key><array><string>applinks:b.example:8080</string></array></dict></plist>"
        #expect(PlistXMLLines.elementLines(ofArrayFor: EntitlementsFile.associatedDomainsKey, in: Array(twice.utf8)) == nil)
        // A binary plist has no lines.
        let binary = try PropertyListSerialization.data(
            fromPropertyList: [EntitlementsFile.associatedDomainsKey: ["applinks:a.example"]], format: .binary, options: 0)
        #expect(try EntitlementsFile.parse(binary).associatedDomainLines == nil)
    }

    /// The rule ids of a SARIF log's results that have no `ruleIndex`, or one that is not their
    /// code's place in the catalogue (the log's `rules`).
    static func resultsWithoutTheirRule(_ text: String) -> [String] {
        guard let log = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let runs = log["runs"] as? [[String: Any]] else { return ["(not a SARIF log)"] }
        return runs.flatMap { ($0["results"] as? [[String: Any]]) ?? [] }.compactMap { result in
            let id = result["ruleId"] as? String ?? ""
            return result["ruleIndex"] as? Int == CodeCatalogue.position(of: id) && CodeCatalogue.position(of: id) != nil ? nil : id
        }
    }

    @Test func theCatalogueHasEveryDocumentedFindingCodeOnce() throws {
        let codes = CodeCatalogue.all.map(\.code)
        #expect(Set(codes).count == codes.count, "a code is catalogued twice")
        for lint in AASALinter.catalog { #expect(codes.contains(lint.code), "lint code \(lint.code)") }
        // The bullets of docs/codes.md that list finding, host and step codes.
        let text = try String(contentsOf: TestPaths.repository.appendingPathComponent("docs/codes.md"), encoding: .utf8)
        let findingBullets = ["- Network", "- TLS", "- HTTP", "- Body", "- Association", "- Apple CDN", "- `diagnose`",
                              "- Entitlement entries", "- Findings about an app", "- Warnings"]
        var documented: [String] = []
        var inBullet = false
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("- ") { inBullet = findingBullets.contains { line.hasPrefix($0) } } else if !line.hasPrefix("  ") { inBullet = false }
            guard inBullet else { continue }
            documented += line.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                .filter { $0.range(of: "^[a-z0-9]+(-[a-z0-9]+)+$", options: .regularExpression) != nil }
        }
        #expect(documented.count > 70)
        for code in documented { #expect(codes.contains(code), "documented code \(code) is not catalogued") }
        let linted = Set(AASALinter.catalog.map(\.code))
        for code in codes where !linted.contains(code) { #expect(text.contains("`\(code)`"), "catalogued code \(code) is not in docs/codes.md") }
        for description in CodeCatalogue.all { #expect(!description.summary.isEmpty && !description.fix.isEmpty) }
    }

    // MARK: - The binary

    /// `fetch`, `lint` and `diagnose` in every CI format against the example sites.
    @Test(.timeLimit(.minutes(5)))
    func everyCommandInEveryCIFormat() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        let environment = sites.environment()
        let fetch = ["--entitlements", Self.entitlements, "--no-store", "-q"]
        let path = Self.entitlements
        let wwwLine = try Self.line(of: "applinks:www.example.com", in: path)
        let oldLine = try Self.line(of: "applinks:old.example.com", in: path)
        let legacyLine = try Self.line(of: "applinks:legacy.example.org", in: path)

        // github: failures at the entries' lines with the fix, warnings, custom-root once, the tally last.
        let github = try ToolRunner.run(fetch + ["--format", "github"], environment: environment)
        #expect(github.status == 1, "\(github.stderr)")
        let lines = github.stdout.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.hasPrefix("::") }, "\(github.stdout)")
        #expect(lines.contains { $0.hasPrefix("::error file=\(path),line=\(wwwLine),title=http-redirect::www.example.com: HTTP 301 redirect") && $0.contains("(fix: serve the file itself") })
        #expect(lines.contains { $0.hasPrefix("::error file=\(path),line=\(oldLine),title=app-not-listed::ABCDE12345.com.example.app is not listed") })
        #expect(lines.contains { $0.hasPrefix("::warning file=\(path),line=\(legacyLine),title=legacy-root-path::") })
        #expect(lines.filter { $0.contains("title=custom-root") }.count == 1)
        #expect(lines.last == "::notice title=aasa-fetch::6 of 8 entries associate, 2 fail, 7 warnings")
        // The same from the environment; --json on the command line wins over AASA_FETCH_FORMAT.
        let fromEnvironment = try ToolRunner.run(fetch, environment: environment.merging(["AASA_FETCH_FORMAT": "github"]) { $1 })
        #expect(fromEnvironment.stdout == github.stdout)
        let jsonWins = try ToolRunner.run(fetch + ["--json"], environment: environment.merging(["AASA_FETCH_FORMAT": "sarif"]) { $1 })
        #expect(jsonWins.status == 1)
        #expect(try jsonWins.json()["schemaVersion"] as? Int == 1)
        let clash = try ToolRunner.run(fetch + ["--json", "--format", "junit"], environment: environment)
        #expect(clash.status == 64)
        #expect(clash.stderr.contains("aasa-fetch: usage: --json means --format json"), "\(clash.stderr)")

        // sarif: valid, a rule per catalogued code, results at the entries' lines.
        let sarif = try ToolRunner.run(fetch + ["--format", "sarif"], environment: environment)
        #expect(sarif.status == 1)
        let log = try #require(try JSONSerialization.jsonObject(with: Data(sarif.stdout.utf8)) as? [String: Any])
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let rules = try #require(((run["tool"] as? [String: Any])?["driver"] as? [String: Any])?["rules"] as? [[String: Any]])
        #expect(rules.compactMap { $0["id"] as? String } == CodeCatalogue.all.map(\.code))
        let results = try #require(run["results"] as? [[String: Any]])
        let redirect = try #require(results.first { $0["ruleId"] as? String == "http-redirect" })
        let physical = try #require(((redirect["locations"] as? [[String: Any]])?.first)?["physicalLocation"] as? [String: Any])
        #expect((physical["artifactLocation"] as? [String: Any])?["uri"] as? String == path)
        #expect((physical["region"] as? [String: Any])?["startLine"] as? Int == wwwLine)
        #expect(redirect["level"] as? String == "error")
        #expect(redirect["ruleIndex"] as? Int == CodeCatalogue.position(of: "http-redirect"))
        #expect(((redirect["message"] as? [String: Any])?["text"] as? String)?.contains("fix: serve the file itself") == true)

        // junit: one case per entry, the two failures with their fix.
        let junit = try ToolRunner.run(fetch + ["--format", "junit"], environment: environment)
        #expect(junit.status == 1)

        // A --domains list (read through the run spool): the lines of the list, comments and blank lines counted.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ci-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("domains.txt").path
        try Data("# the list\n\nwww.example.com\r\nshop.example.net # fine\n\napplinks:bad.example.com:8443\n".utf8).write(to: URL(fileURLWithPath: list))
        let listArguments = ["--domains", list, "--app-id", "ABCDE12345.com.example.app", "--no-store", "-q", "--format", "github"]
        let spooled = try ToolRunner.run(listArguments, environment: environment)
        #expect(spooled.status == 1)
        #expect(spooled.stdout.contains("::error file=\(list),line=3,title=http-redirect::"), "\(spooled.stdout)")
        #expect(spooled.stdout.contains("::error file=\(list),line=6,title=entitlement-port::"), "\(spooled.stdout)")
        let listJUnit = try ToolRunner.run(Array(listArguments.dropLast()) + ["junit"], environment: environment)
        let listSARIF = try ToolRunner.run(Array(listArguments.dropLast()) + ["sarif"], environment: environment)
        // --domain entries name no file: no line in GitHub, the host's URL in SARIF.
        let single = try ToolRunner.run(["--domain", "applinks:www.example.com", "--app-id", "ABCDE12345.com.example.app", "--no-store", "-q", "--format", "github"], environment: environment)
        #expect(single.stdout.hasPrefix("::error title=http-redirect::www.example.com: HTTP 301"), "\(single.stdout)")
        let singleSARIF = try ToolRunner.run(["--domain", "applinks:www.example.com", "--app-id", "ABCDE12345.com.example.app", "--no-store", "-q", "--format", "sarif", "--route", "both"], environment: environment)

        // lint: a good file, a bad one (line and column), an unreadable one.
        let bad = folder.appendingPathComponent("bad.json").path
        try Data("{\"applinks\": {\"details\": [{\"appIDs\": [\"X\"], \"components\": [{\"/\": \"/a\"}]}]}}\n".utf8).write(to: URL(fileURLWithPath: bad))
        let good = Self.site + "/example.com/.well-known/apple-app-site-association"
        let lintFiles = [good, bad, folder.appendingPathComponent("missing.json").path]
        let lintGitHub = try ToolRunner.run(["lint"] + lintFiles + ["--format", "github"])
        #expect(lintGitHub.status == 2)
        #expect(lintGitHub.stdout.contains("::error file=\(bad),line=1,col=39,title=app-id-invalid::"), "\(lintGitHub.stdout)")
        #expect(lintGitHub.stdout.contains("title=file-unreadable::"))
        let lintSARIF = try ToolRunner.run(["lint"] + lintFiles + ["--format", "sarif"])
        let lintJUnit = try ToolRunner.run(["lint"] + lintFiles + ["--format", "junit"])
        #expect(lintSARIF.status == 2 && lintJUnit.status == 2)

        // diagnose: one case per entry walked.
        let diagnoseGitHub = try ToolRunner.run(["diagnose"] + fetch.filter { $0 != "--no-store" } + ["--format", "github"], environment: environment)
        #expect(diagnoseGitHub.status == 1)
        #expect(diagnoseGitHub.stdout.contains("::error file=\(path),line=\(wwwLine),title=http-redirect::www.example.com: step http:"), "\(diagnoseGitHub.stdout)")
        let diagnoseSARIF = try ToolRunner.run(["diagnose", "www.example.com", "--app-id", "ABCDE12345.com.example.app", "--format", "sarif"], environment: environment)
        let diagnoseJUnit = try ToolRunner.run(["diagnose"] + fetch.filter { $0 != "--no-store" } + ["--format", "junit"], environment: environment)
        #expect(diagnoseSARIF.status == 1 && diagnoseJUnit.status == 1)

        // A run that fails before any report: the line on standard error, the failure in the format on standard output.
        let missing = ["--entitlements", folder.appendingPathComponent("none.entitlements").path, "--no-store"]
        let failedSARIF = try ToolRunner.run(missing + ["--format", "sarif"])
        #expect(failedSARIF.status == 2)
        #expect(failedSARIF.stderr.hasPrefix("aasa-fetch: entitlements-unreadable: "), "\(failedSARIF.stderr)")
        #expect(failedSARIF.stdout.contains("\"executionSuccessful\": false"))
        let failedGitHub = try ToolRunner.run(missing + ["--format", "github"])
        #expect(failedGitHub.status == 2)
        #expect(failedGitHub.stdout.hasPrefix("::error title=entitlements-unreadable::"))
        let failedJUnit = try ToolRunner.run(missing + ["--format", "junit"])
        #expect(failedJUnit.status == 2)

        // Every SARIF log is valid against the schema.
        let logs = [sarif, listSARIF, singleSARIF, lintSARIF, diagnoseSARIF, failedSARIF].map(\.stdout)
        for (index, problems) in try CIFormatValidator.sarifProblems(logs).enumerated() {
            #expect(problems.isEmpty, "SARIF log \(index): \(problems)\n\(logs[index].prefix(400))")
        }
        // Every finding names its rule by position (`legacy-root-path-tried` had none); a file
        // or a run that could not be read is an error of the run, which no rule describes.
        for (index, text) in logs.enumerated() {
            let unruled = Self.resultsWithoutTheirRule(text).filter { $0 != "file-unreadable" }
            #expect(unruled.isEmpty, "SARIF log \(index): \(unruled)")
        }
        // Every JUnit document parses, with counts that match its cases.
        let documents = [junit, listJUnit, lintJUnit, diagnoseJUnit, failedJUnit].map(\.stdout)
        let parsed = try CIFormatValidator.junit(documents)
        for (index, answer) in parsed.enumerated() {
            #expect(answer["problems"] as? [String] == [], "JUnit document \(index): \(answer["problems"] ?? "")\n\(documents[index].prefix(400))")
        }
        func cases(_ answer: [String: Any]) -> [[String: Any]] {
            // The run's own case (warnings said once for every host) aside.
            ((answer["suites"] as? [[String: Any]]) ?? []).flatMap { ($0["cases"] as? [[String: Any]]) ?? [] }
                .filter { $0["classname"] as? String != "run" }
        }
        let fetchCases = cases(parsed[0])
        #expect(fetchCases.count == 8)
        #expect(fetchCases.filter { $0["failure"] is [String: Any] }.count == 2)
        let www = try #require(fetchCases.first { $0["name"] as? String == "applinks:www.example.com" })
        #expect(www["classname"] as? String == "www.example.com")
        let wwwFailure = try #require(www["failure"] as? [String: Any])
        #expect(wwwFailure["type"] as? String == "http-redirect")
        #expect((wwwFailure["text"] as? String)?.contains("fix: serve the file itself") == true)
        #expect(cases(parsed[1]).count == 3)
        #expect(cases(parsed[1]).first { $0["name"] as? String == "applinks:bad.example.com:8443" }.map { ($0["failure"] as? [String: Any])?["type"] as? String } == "entitlement-port")
        let lintCases = cases(parsed[2])
        #expect(lintCases.map { $0["name"] as? String } == lintFiles)
        #expect(lintCases[0]["failure"] is NSNull && lintCases[1]["failure"] is [String: Any] && lintCases[2]["error"] is [String: Any])
        #expect(cases(parsed[3]).count == 8)
        #expect(cases(parsed[4]).first.map { ($0["error"] as? [String: Any])?["type"] as? String } == "entitlements-unreadable")
    }

    /// `refresh --format github|sarif|junit`: one case per host fetched (group `refresh`), failed
    /// when it broke or lost an association, its changes as problems at the host's URL, the tally
    /// last. Each format refreshes its own copy of one store, so each sees the same pass.
    @Test(.timeLimit(.minutes(3)))
    func refreshInEveryCIFormat() async throws {
        let sites = try await NotifyCommandTests.Sites.recordedThenChanged()
        defer { sites.stop() }
        let later = NotifyCommandTests.later(days: 2)
        func refresh(_ extra: [String]) throws -> ToolRunner.Result {
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ci-refresh-\(UUID().uuidString)")
            try FileManager.default.copyItem(at: sites.cache, to: copy)
            defer { try? FileManager.default.removeItem(at: copy) }
            return try ToolRunner.run(["refresh", "--now", later] + extra + sites.network, cache: copy.path)
        }
        let (h1, h2) = ("h1.notify.example.com", "h2.notify.example.com")

        let github = try refresh(["--format", "github"])
        #expect(github.status == 1, "an association broke: \(github.stderr)")
        let lines = github.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(github.stdout)")
        #expect(lines[0].hasPrefix("::error title=http-client-error::\(h1) broke: ") && lines[0].contains("the last approved file is kept"), "\(lines)")
        #expect(lines[1].hasPrefix("::error title=app-not-listed::\(h2) association-lost: ") && lines[1].contains("(applinks:\(h2))")
                && lines[1].contains("(fix: add \"\(NotifyCommandTests.appID)\" to the appIDs of a detail under applinks.details)"), "\(lines)")
        #expect(lines[2].hasPrefix("::notice title=changed::\(h2) changed: "), "\(lines)")
        #expect(lines[3] == "::notice title=aasa-fetch::3 hosts fetched, 3 changes, association broken")

        let sarif = try refresh(["--format", "sarif"])
        #expect(sarif.status == 1)
        #expect(try CIFormatValidator.sarifProblems([sarif.stdout]).first?.isEmpty == true, "\(sarif.stdout.prefix(400))")
        let log = try #require(try JSONSerialization.jsonObject(with: Data(sarif.stdout.utf8)) as? [String: Any])
        let results = try #require(((log["runs"] as? [[String: Any]])?.first)?["results"] as? [[String: Any]])
        #expect(results.map { "\($0["ruleId"] ?? "") \($0["level"] ?? "")" } == ["http-client-error error", "app-not-listed error", "changed note"])
        // The notices titled by the change have their rules too (`changed` had none).
        #expect(Self.resultsWithoutTheirRule(sarif.stdout).isEmpty, "\(Self.resultsWithoutTheirRule(sarif.stdout))")
        let artifact = ((results.first?["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])?["artifactLocation"] as? [String: Any]
        #expect(artifact?["uri"] as? String == "https://\(h1)/.well-known/apple-app-site-association")

        let junit = try refresh(["--format", "junit"])
        #expect(junit.status == 1)
        let parsed = try #require(try CIFormatValidator.junit([junit.stdout]).first)
        #expect(parsed["problems"] as? [String] == [], "\(parsed)\n\(junit.stdout.prefix(400))")
        let cases = ((parsed["suites"] as? [[String: Any]]) ?? []).flatMap { ($0["cases"] as? [[String: Any]]) ?? [] }
        #expect(cases.map { $0["name"] as? String } == ["h0.notify.example.com", h1, h2])
        #expect(cases.map { ($0["failure"] as? [String: Any])?["type"] as? String } == [nil, "http-client-error", "app-not-listed"])
        #expect(cases.allSatisfy { $0["classname"] as? String == "refresh" })

        // One document for one pass: not with --watch or --worker; --json still means --format json.
        let watch = try refresh(["--format", "github", "--watch"])
        #expect(watch.status == 64 && watch.stderr.contains("with --watch or --worker use --json"), "\(watch.stderr)")
        let clash = try refresh(["--format", "junit", "--json"])
        #expect(clash.status == 64 && clash.stderr.contains("--json means --format json"), "\(clash.stderr)")
    }

    /// A list past the spool's page size (1,000 hosts a query) in every CI format: the spooled
    /// run writes what the in-memory run writes, the lines of the list hold across pages, SARIF
    /// validates and JUnit parses with one case per entry.
    @Test(.timeLimit(.minutes(8)))
    func aLargeSpooledListInEveryCIFormat() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ci-large-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var lines = ["# hosts", ""]
        for index in 0..<2400 {
            lines.append("h\(index).example.\(["com", "de", "io"][index % 3])")
            if index % 500 == 0 { lines.append("applinks:bad\(index).example.com:8443  # a port") }
        }
        let list = work.appendingPathComponent("list.txt").path
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: list))
        // Every host is refused as a private address without a request: deterministic, no network.
        let arguments = ["--domains", list, "--no-store", "--app-id", "ABCDE12345.com.example.app", "--quiet",
                         "--connect-to", "::127.0.0.1:9", "--connect-timeout", "1", "--retry-delays", "", "--concurrency", "64"]
        var outputs: [String: String] = [:]
        for format in ["github", "sarif", "junit"] {
            let spooled = try ToolRunner.run(arguments + ["--format", format], environment: ["TMPDIR": work.path], timeout: .seconds(240))
            #expect(spooled.status == 1, "\(spooled.stderr)")
            outputs[format] = spooled.stdout
        }
        let github = try #require(outputs["github"])
        let far = try #require(lines.firstIndex(of: "h2222.example.io")) + 1
        #expect(github.contains("::error file=\(list),line=\(far),title=private-address::h2222.example.io: "), "line \(far)")
        let port = try #require(lines.firstIndex { $0.hasPrefix("applinks:bad2000.") }) + 1
        #expect(github.contains("::error file=\(list),line=\(port),title=entitlement-port::"))
        #expect(github.split(separator: "\n").count == 2400 + 5 + 1)
        #expect(try CIFormatValidator.sarifProblems([try #require(outputs["sarif"])]) == [[]])
        let junit = try CIFormatValidator.junit([try #require(outputs["junit"])])[0]
        #expect(junit["problems"] as? [String] == [])
        let suites = try #require(junit["suites"] as? [[String: Any]])
        #expect(suites.reduce(0) { $0 + ($1["tests"] as? Int ?? 0) } == 2405)
        #expect(suites.last?["name"] as? String == "entries not fetched" && suites.last?["failures"] as? Int == 5)
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path) == ["list.txt"])
    }
}
