import AASAFetchTestSupport
import Foundation
import Testing

/// `aasa-fetch match` end to end through the built binary.
@Suite(.timeLimit(.minutes(2)))
struct MatchCommandTests {
    /// Every conformance case (`cases.json` and our own `local-cases.json`), fed through the line
    /// protocol of testdata/conformance/README.md.
    @Test func conformanceCasesThroughTheLineProtocol() throws {
        var cases: [[String: Any]] = []
        for file in TestPaths.allConformanceCases {
            let data = try Data(contentsOf: file)
            let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            cases += try #require(root["matching"] as? [[String: Any]])
        }
        #expect(cases.count >= 96 + 54)
        var lines: [String] = []
        for (index, item) in cases.enumerated() {
            let request: [String: Any] = [
                "id": index, "aasa": item["aasa"] ?? NSNull(), "domain": item["domain"] ?? "",
                "appId": item["appId"] ?? "", "url": item["url"] ?? "",
            ]
            lines.append(String(decoding: try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys]), as: UTF8.self))
        }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("cases-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: input)

        let result = try ToolRunner.run(["match", "--cases", input.path])
        #expect(result.status == 0, "\(result.stderr)")
        var decisions: [Int: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            decisions[try #require(object["id"] as? Int)] = object["decision"] as? String
        }
        #expect(decisions.count == cases.count)
        for (index, item) in cases.enumerated() {
            #expect(decisions[index] == item["expect"] as? String, "\(item["name"] ?? index)")
        }
    }

    /// An id is echoed as written, whatever number it is: 12345678901234567890123 came back as
    /// 1.2345678901234568e+22, and `[1e400]` ended the stream with internal-error (exit 2), the
    /// lines after it never answered.
    @Test func idsAreEchoedAsWritten() throws {
        let body = #""aasa": {"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/x"}]}]}}, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x""#
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("ids-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data("{\"id\": 12345678901234567890123, \(body)}\n{\"id\": [1e400, -0.0, 1E+2], \(body)}\n{\"id\": 3, \(body)}\n".utf8).write(to: input)
        let result = try ToolRunner.run(["match", "--cases", input.path])
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(result.stdout) \(result.stderr)")
        #expect(lines.first == #"{"schemaVersion":1,"id":12345678901234567890123,"decision":"match","error":null}"#)
        #expect(lines.dropFirst().first?.hasPrefix(#"{"schemaVersion":1,"id":[1e400,-0.0,1E+2],"#) == true, "\(lines)")
        #expect(lines.last == #"{"schemaVersion":1,"id":3,"decision":"match","error":null}"#)
    }

    /// A bad line gets an error answer and the others still get theirs.
    @Test func badLinesAreAnsweredWithAnError() throws {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data("""
            {"id": 1, "aasa": {"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/x"}]}]}}, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}
            not json
            {"id": 3, "aasa": [], "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}

            """.utf8).write(to: input)
        let result = try ToolRunner.run(["match", "--cases", input.path])
        #expect(result.status == 1)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == #"{"schemaVersion":1,"id":1,"decision":"match","error":null}"#)
        #expect(lines[1].hasPrefix(#"{"schemaVersion":1,"id":null,"decision":null,"error":{"code":"invalid-line","message":"#))
        #expect(lines[2].hasPrefix(#"{"schemaVersion":1,"id":3,"decision":null,"error":{"code":"not-an-association-file","message":"#))
    }

    /// `--host` names the host of an `--aasa` file; with entries or `--cases` it is a usage error,
    /// not an option dropped without a word.
    @Test func hostGoesWithAASAOnly() throws {
        for arguments in [["match", "https://b.example/x", "--domain", "a.example", "--host", "b.example", "--no-store"],
                          ["match", "--cases", "-", "--host", "b.example"]] {
            let run = try ToolRunner.run(arguments + ["--json"])
            #expect(run.status == 64, "\(arguments): \(run.stdout) \(run.stderr)")
            #expect(run.stdout.contains("--host goes with --aasa"), "\(run.stdout)")
        }
    }

    /// A line is read by the project's own JSON parser, and its `aasa` value decoded as `--aasa`
    /// decodes a file. Regression: Foundation read the line and wrote `aasa` out again, so valid
    /// JSON it refuses (1e400) was `invalid-line` with "The data is not in the correct format",
    /// a line that is not JSON got no column, and `"domain": 5` turned the host check off.
    @Test func linesAreReadByTheProjectsParser() throws {
        let file = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/a", "comment": 1e400}]}]}}"#
        let bad = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/a", "comment": "\ud800"}]}]}}"#
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("parser-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data("""
            {"id": 1, "aasa": \(file), "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/a"}
            {"id": 2, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/a", "aasa" :\t\(file) }\r
            {"id": 3, "aasa": \(bad), "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/a"}
            {"id": 4, "aasa": \(file), "domain": 5, "appId": "ABCDE12345.a.b", "url": "https://example.com/a"}
            {"id": 5, "aasa": \(file), "domain": "other.example", "appId": "ABCDE12345.a.b", "url": "https://example.com/a"}
            {"id": 6, "aasa": \(file), "appId": "ABCDE12345.a.b", "url": "https://example.com/a",}

            """.utf8).write(to: input)
        let result = try ToolRunner.run(["match", "--cases", input.path])
        let lines = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.count == 6, "\(result.stdout) \(result.stderr)")
        func error(_ index: Int) -> [String: Any]? { lines.indices.contains(index) ? lines[index]["error"] as? [String: Any] : nil }
        #expect(lines.prefix(2).map { $0["decision"] as? String } == ["match", "match"], "\(lines)")
        // Not JSON: the line is, so it says where.
        #expect(error(2)?["code"] as? String == "invalid-line")
        #expect((error(2)?["message"] as? String)?.contains("column") == true, "\(String(describing: error(2)))")
        #expect((error(2)?["message"] as? String)?.contains("surrogate") == true, "\(String(describing: error(2)))")
        #expect(error(3)?["code"] as? String == "invalid-line")
        #expect(lines.dropFirst(4).first?["decision"] as? String == "no_match", "the domain is checked")
        #expect(error(5)?["code"] as? String == "invalid-line")
        #expect((error(5)?["message"] as? String)?.contains("column") == true)
        #expect(result.status == 1)
    }

    /// The line protocol answers each line as it arrives (a reader waits for each answer before it
    /// writes the next line), answers a line over the limit `line-too-long` and goes on.
    @Test func casesAreAnsweredAsTheyArrive() throws {
        Loopback.ignoreSIGPIPE()
        func request(_ id: Int) -> String {
            #"{"id": \#(id), "aasa": {"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/x"}]}]}}, "domain": "example.com", "appId": "ABCDE12345.a.b", "url": "https://example.com/x"}"#
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        process.arguments = ["match", "--cases", "-"]
        process.environment = ChildProcess.inheritedEnvironment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { ChildProcess.terminate(process) } }
        let reader = output.fileHandleForReading
        var read = Data()
        // Reads until `lines` lines arrived (bounded).
        func readLines(_ lines: Int) {
            let deadline = ContinuousClock.now + .seconds(60)
            while read.count(where: { $0 == 10 }) < lines, ContinuousClock.now < deadline {
                var descriptor = pollfd(fd: reader.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 200) > 0 else { continue }
                let chunk = reader.availableData
                if chunk.isEmpty { return }
                read.append(chunk)
            }
        }
        try input.fileHandleForWriting.write(contentsOf: Data((request(1) + "\n").utf8))
        readLines(1)
        #expect(String(decoding: read, as: UTF8.self) == #"{"schemaVersion":1,"id":1,"decision":"match","error":null}"# + "\n",
                "the first line is answered while the input is still open")

        var long = Data(repeating: UInt8(ascii: "x"), count: (1 << 20) + 10)
        long.append(UInt8(ascii: "\n"))
        try input.fileHandleForWriting.write(contentsOf: long)
        try input.fileHandleForWriting.write(contentsOf: Data((request(3) + "\n").utf8))
        try input.fileHandleForWriting.close()
        readLines(3)
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(60)))
        #expect(process.terminationStatus == 1, "a line could not be used")
        let lines = String(decoding: read, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.dropFirst().first == #"{"schemaVersion":1,"id":null,"decision":null,"error":{"code":"line-too-long","message":"a line is longer than 1048576 bytes"}}"#)
        #expect(lines.last == #"{"schemaVersion":1,"id":3,"decision":"match","error":null}"#)
    }

    /// `--aasa` with `--json`: one explanation per URL and app, with where it was decided.
    @Test func explainsAsJSONLines() throws {
        let file = TestPaths.repository.appendingPathComponent("examples/site/example.com/.well-known/apple-app-site-association")
        let result = try ToolRunner.run([
            "match", "https://example.com/buy/42", "https://example.com/help/website/a", "https://example.com/other",
            "--aasa", file.path, "--app-id", "ABCDE12345.com.example.app", "--json",
        ])
        #expect(result.status == 1)
        let objects = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["decision"] as? String } == ["match", "exclude", "no_match"])
        #expect(objects[0]["host"] as? String == "example.com")
        #expect(objects[0]["detail"] as? Int == 0)
        #expect((objects[0]["component"] as? [String: Any])?["index"] as? Int == 1)
        #expect(objects[0]["appID"] as? String == "ABCDE12345.com.example.app")
        #expect(objects[2]["nearest"] != nil)
    }

    /// `--host` is compared as URL hosts are (a Unicode name in Punycode: `bücher.example` never
    /// matched), and a URL without a host is no universal link (`https:///a` was matched against
    /// a file said to be served for "").
    @Test func aUnicodeHostMatchesAndAURLWithoutAHostDoesNot() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("all-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"*"}]}]}}"#.utf8).write(to: file)
        let unicode = try ToolRunner.run(["match", "--aasa", file.path, "--app-id", "ABCDE12345.com.example.app", "--host", "Bücher.example",
                                          "https://bücher.example/a", "--json"])
        #expect(unicode.status == 0, "\(unicode.stdout) \(unicode.stderr)")
        #expect(unicode.stdout.contains(#""host":"xn--bcher-kva.example""#), "\(unicode.stdout)")
        let hostless = try ToolRunner.run(["match", "--aasa", file.path, "--app-id", "ABCDE12345.com.example.app", "https:///a", "https://@/a", "--json"])
        #expect(hostless.status == 1, "\(hostless.stdout)")
        let lines = hostless.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains(#""decision":"no_match""#) && $0.contains("has no host") }, "\(hostless.stdout)")
    }

    /// An entry `fetch` and `diagnose` call broken (`entitlement-not-punycode`: devices compare
    /// ASCII names, so it never matches) opens no URL in `match` either, though the host behind it
    /// serves a file that lists the app; stderr says why. The Punycode entry opens the same URL.
    @Test(.timeLimit(.minutes(2)))
    func anEntryWithAnErrorCoversNoURL() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        let url = "https://xn--bcher-kva.example/products/1"
        let common = ["--app-id", "ABCDE12345.com.example.app", "--no-store", "--json"]
        let unicode = try ToolRunner.run(["match", url, "--domain", "applinks:bücher.example"] + common, environment: sites.environment())
        #expect(unicode.status == 1, "\(unicode.stderr)")
        let decision = try unicode.json()
        #expect(decision["decision"] as? String == "no_match", "\(unicode.stdout)")
        #expect((decision["reason"] as? String)?.hasSuffix(" ") == false, "\(unicode.stdout)")
        #expect(unicode.stderr.contains("applinks:bücher.example covers no URL, error entitlement-not-punycode"), "\(unicode.stderr)")

        let ascii = try ToolRunner.run(["match", url, "--domain", "applinks:xn--bcher-kva.example"] + common, environment: sites.environment())
        #expect(ascii.status == 0, "\(ascii.stderr)")
        #expect(try ascii.json()["decision"] as? String == "match", "\(ascii.stdout)")
    }

    /// A human line shows at most 400 characters of a rule and says how many it left out: a rule
    /// of 4,000 query items printed 70 KB on one line. `--json` keeps the rule whole.
    @Test func aLongRuleIsCutOnHumanLines() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("long-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let items = (0..<4000).map { #""item\#($0)":"?*""# }.joined(separator: ",")
        try Data(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a","?":{\#(items)}}]}]}}"#.utf8).write(to: file)
        for (url, word) in [("https://example.com/b", "no_match"), ("https://example.com/a?" + (0..<4000).map { "item\($0)=1" }.joined(separator: "&"), "match")] {
            let human = try ToolRunner.run(["match", url, "--aasa", file.path, "--app-id", "ABCDE12345.com.example.app"])
            let lines = human.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix(word) == true, "\(lines.first ?? "")")
            // The URL's own line is not cut; every other line is.
            #expect(lines.dropFirst().allSatisfy { $0.count < 600 }, "\(lines.dropFirst().map(\.count))")
            #expect(lines.contains { $0.contains("more characters; --json shows all)") })
        }
        let json = try ToolRunner.run(["match", "https://example.com/b", "--aasa", file.path, "--app-id", "ABCDE12345.com.example.app", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rule = try #require(((object["nearest"] as? [String: Any])?["component"] as? [String: Any])?["rule"] as? String)
        #expect(rule.contains(#""item3999":"?*""#))
    }

    /// A rule that decided with keys from `defaults` says which key came from which level, in
    /// human output and in JSON; a failing pattern from `defaults` says so too.
    @Test func saysWhenADefaultDecided() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("defaults-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"""
            {"applinks":{"defaults":{"exclude":true},"details":[{"appIDs":["ABCDE12345.com.example.app"],
             "defaults":{"/":"/private/*"},"components":[{"#":"*"},{"/":"/shop/*","exclude":false}]}]}}
            """#.utf8).write(to: file)
        let urls = ["https://example.com/private/1", "https://example.com/shop/1", "https://example.com/other"]
        let human = try ToolRunner.run(["match"] + urls + ["--aasa", file.path, "--app-id", "ABCDE12345.com.example.app"])
        #expect(human.status == 1)
        let lines = human.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains {
            $0.contains(##"matched an exclusion: {"#":"*"}; from defaults: "/":"/private/*" from the detail's defaults, "exclude":true from applinks.defaults"##)
        }, "\(human.stdout)")
        #expect(lines.contains { $0.contains(#"matched: {"/":"/shop/*","exclude":false}"#) && !$0.contains("from defaults") }, "\(human.stdout)")
        #expect(lines.contains { $0.contains(#"path "/other" does not match "/private/*" (pattern from the detail's defaults)"#) }, "\(human.stdout)")
        #expect(lines.contains { $0.contains(#"from defaults: "/":"/private/*" from the detail's defaults, "exclude":true from applinks.defaults"#) && !$0.contains("matched") }, "\(human.stdout)")

        let json = try ToolRunner.run(["match"] + urls + ["--aasa", file.path, "--app-id", "ABCDE12345.com.example.app", "--json"])
        let objects = try json.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["decision"] as? String } == ["exclude", "match", "no_match"])
        let inherited = try #require((objects[0]["component"] as? [String: Any])?["inherited"] as? [[String: Any]])
        #expect(inherited.map { $0["key"] as? String } == ["/", "exclude"])
        #expect(inherited.map { $0["level"] as? String } == ["detail", "applinks"])
        #expect(inherited.map { $0["value"] as? String } == [#""/private/*""#, "true"])
        #expect(((objects[1]["component"] as? [String: Any])?["inherited"] as? [Any])?.isEmpty == true)
        let nearest = try #require(objects[2]["nearest"] as? [String: Any])
        let failures = try #require(nearest["failures"] as? [[String: Any]])
        #expect(failures.first?["inheritedFrom"] as? String == "detail")
    }

    /// `--entitlements`: the files are downloaded (exact host, then the wildcard parent) and matched.
    @Test func matchesAgainstDownloadedFiles() async throws {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("match-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func site(_ host: String, _ json: String) throws -> String {
            let dir = root.appendingPathComponent(host)
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
            try Data(json.utf8).write(to: dir.appendingPathComponent(".well-known/apple-app-site-association"))
            return dir.path
        }
        let leaf = try ca.leaf(for: ["example.com", "www.example.com"])
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: leaf, serverNames: ["www.example.com"],
                             documentRoot: try site("www.example.com", #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/www-only/*"}]}]}}"#)),
            NginxVirtualHost(certificate: leaf, serverNames: ["example.com"],
                             documentRoot: try site("example.com", #"{"applinks":{"details":[{"appIDs":["ABCDE12345.a.b"],"components":[{"/":"/parent/*"}]}]}}"#)),
        ], http2: false)
        defer { nginx.stop() }
        let network = ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""]
        let result = try ToolRunner.run(["match", "https://www.example.com/www-only/1", "https://www.example.com/parent/1",
                                         "https://www.example.com/none", "--domain", "applinks:www.example.com",
                                         "--domain", "applinks:*.example.com", "--json"] + network)
        let objects = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["decision"] as? String } == ["match", "match", "no_match"], "\(result.stderr)")
        #expect(objects.map { $0["host"] as? String } == ["www.example.com", "example.com", nil])
        #expect(result.status == 1)
    }

    /// `--entitlements` answers for the app the file names (its `application-identifier`), as
    /// `fetch` and `match --app` do: a site that lists only another app is `no_match` (exit 1),
    /// not a `match` for the other app (exit 0, a silent green in CI). Regression: `match` took
    /// every app the downloaded files named and ignored the entitlements' own app ID.
    @Test func entitlementsAnswerForTheirOwnAppID() async throws {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("match-own-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let site = root.appendingPathComponent("other.example.com")
        try FileManager.default.createDirectory(at: site.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
        try Data(#"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"*"}]}]}}"#.utf8)
            .write(to: site.appendingPathComponent(".well-known/apple-app-site-association"))
        let entitlements = root.appendingPathComponent("App.entitlements")
        let plist: [String: Any] = [
            "application-identifier": "ABCDE12345.com.example.app",
            "com.apple.developer.associated-domains": ["applinks:other.example.com"],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: entitlements)
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: try ca.leaf(for: ["other.example.com"]), serverNames: ["other.example.com"], documentRoot: site.path),
        ], http2: false)
        defer { nginx.stop() }
        let network = ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""]
        for store in [["--no-store"], []] {
            let result = try ToolRunner.run(["match", "https://other.example.com/anything", "--entitlements", entitlements.path, "--json"] + store + network)
            let objects = try result.stdout.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(objects.map { $0["appID"] as? String } == ["ABCDE12345.com.example.app"], "\(store) \(result.stdout) \(result.stderr)")
            #expect(objects.map { $0["decision"] as? String } == ["no_match"], "\(store)")
            #expect(result.status == 1, "\(store)")
        }
        // --app-id still chooses the apps to answer for.
        let chosen = try ToolRunner.run(["match", "https://other.example.com/anything", "--entitlements", entitlements.path,
                                         "--app-id", "ZYXWV98765.com.example.other", "--no-store"] + network)
        #expect(chosen.status == 0, "\(chosen.stdout) \(chosen.stderr)")
    }
}

/// `match --entitlements` with the store (the default): a `webcredentials:` entry before an
/// `applinks:` one used to crash the registration (exit 132), which `--no-store` hid.
@Suite(.timeLimit(.minutes(2)))
struct MatchEntitlementsStoreTests {
    @Test func webcredentialsBeforeApplinksRecordsAndMatches() async throws {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("match-store-\(UUID().uuidString)")
        let cache = root.appendingPathComponent("cache")
        defer { try? FileManager.default.removeItem(at: root) }
        let site = root.appendingPathComponent("example.com")
        try FileManager.default.createDirectory(at: site.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
        let file = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#
        try Data(file.utf8).write(to: site.appendingPathComponent(".well-known/apple-app-site-association"))
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: try ca.leaf(for: ["example.com"]), serverNames: ["example.com"], documentRoot: site.path,
                             directives: ["location ~ apple-app-site-association$ { default_type application/json; }"]),
        ], http2: false)
        defer { nginx.stop() }
        let entitlements = root.appendingPathComponent("App.entitlements")
        let plist: [String: Any] = [
            "application-identifier": "ABCDE12345.com.example.app",
            "com.apple.developer.associated-domains": ["webcredentials:example.com", "applinks:example.com"],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: entitlements)
        let network = ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""]

        let first = try ToolRunner.run(["match", "https://example.com/buy/1", "--entitlements", entitlements.path] + network, cache: cache.path)
        #expect(first.status == 0, "exit \(first.status)\nstdout: \(first.stdout)\nstderr: \(first.stderr.prefix(2000))")
        #expect(first.stdout.hasPrefix("match ") && first.stdout.contains("https://example.com/buy/1"), "\(first.stdout)")
        #expect(!first.stderr.contains("Fatal error"))

        // The host and the entry that needs it were recorded; a second run uses the stored file.
        let show = try ToolRunner.run(["show", "example.com", "--json"], cache: cache.path)
        #expect(show.status == 0, "\(show.stderr)")
        let record = try #require((try show.json()["hosts"] as? [[String: Any]])?.first)
        #expect((record["entries"] as? [[String: Any]])?.compactMap { $0["entry"] as? String } == ["applinks:example.com"])
        let logged = nginx.requests().count
        let second = try ToolRunner.run(["match", "https://example.com/buy/2", "--entitlements", entitlements.path] + network, cache: cache.path)
        #expect(second.status == 0, "\(second.stdout)\n\(second.stderr.prefix(2000))")
        #expect(nginx.requests().count == logged, "the stored approved file was used")

        // A stored file over this run's --max-size is not used: it is downloaded again and judged
        // by that limit, as fetch would. Regression: the stored file answered, over any limit.
        let limited = try ToolRunner.run(["match", "https://example.com/buy/3", "--entitlements", entitlements.path, "--max-size", "64"] + network,
                                         cache: cache.path)
        #expect(limited.status == 1, "\(limited.stdout)\n\(limited.stderr.prefix(2000))")
        #expect(limited.stdout.hasPrefix("no_match "), "\(limited.stdout)")
        #expect(nginx.requests().count > logged, "the file was downloaded again")
    }
}
