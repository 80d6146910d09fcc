import AASAFetchCore
import AASAFetchTestSupport
import ArgumentParser
import Foundation
import Testing

@testable import AASAFetchCLI

/// Options from a config file (``ConfigFile`` read by ``OptionSources``): JSON and YAML, every
/// type, sections, precedence below flags and the environment, exclusive groups across sources,
/// relative paths, default file discovery, and the errors that name the key or the file.
@Suite struct ConfigFileTests {
    typealias Fetch = AASAFetchCommand.Fetch

    /// A fresh working directory, removed by `remove()`.
    final class Folder {
        let url: URL
        var path: String { url.path }

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-config-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }

        /// Writes `text` at `name` (folders created) and returns its path.
        @discardableResult
        func write(_ name: String, _ text: String) throws -> String {
            let file = url.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
            return file.path
        }

        /// The path of `name` in the folder.
        func at(_ name: String) -> String {
            url.appendingPathComponent(name).path
        }

        func remove() {
            try? FileManager.default.removeItem(at: url)
        }
    }

    private func resolve(_ arguments: [String], _ environment: [String: String] = [:], in folder: Folder) throws -> OptionSources.Resolution {
        try OptionSources.resolve(arguments, environment: environment, currentDirectory: folder.path)
    }

    private func fetch(_ arguments: [String], _ environment: [String: String] = [:], in folder: Folder) throws -> Fetch {
        let resolution = try resolve(arguments, environment, in: folder)
        return try #require(try AASAFetchCommand.parseAsRoot(resolution.arguments) as? Fetch)
    }

    /// The message, code and exit status of what `resolve` (or the parse after it) throws.
    private func failure(_ arguments: [String], _ environment: [String: String] = [:], in folder: Folder) -> (message: String, code: String, status: Int32)? {
        do {
            let resolution = try resolve(arguments, environment, in: folder)
            _ = try AASAFetchCommand.parseAsRoot(resolution.arguments)
            return nil
        } catch let failure as CommandFailure {
            return (failure.message, failure.code, failure.status.rawValue)
        } catch {
            return (AASAFetchCommand.message(for: error), "usage", AASAFetchCommand.exitCode(for: error).rawValue)
        }
    }

    /// Runs the binary in `folder` with only `environment` of ours.
    private func run(_ arguments: [String], in folder: Folder, environment: [String: String] = [:]) throws -> ToolRunner.Result {
        let output = try ChildProcess.run(
            ToolRunner.binary, arguments, environment: ["NO_COLOR": "1"].merging(environment) { _, new in new }, workingDirectory: folder.url,
            timeout: .seconds(60))
        return ToolRunner.Result(status: output.status, stdout: output.standardOutput, stderr: output.standardError)
    }

    // MARK: - Types

    @Test func everyTypeFromJSON() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.json", """
            {
              "cacert": "ca.pem",
              "allow-private": true,
              "quiet": false,
              "concurrency": 7,
              "max-time": 2.5,
              "connect-to": ["a.test:443:127.0.0.1:1", "b.test:443:127.0.0.1:2"],
              "app-id": "ABCDE12345.com.example.app",
              "domain": ["applinks:a.test", "applinks:b.test"],
              "user-agent": "Mozilla/5.0 (X11; Linux)",
              "retry-delays": "",
              "region": null
            }
            """)
        let command = try fetch([], in: folder)
        #expect(command.network.cacert == folder.at("ca.pem"))
        #expect(command.network.allowPrivate)
        #expect(!command.input.quiet)
        #expect(command.network.concurrency == 7)
        #expect(command.network.maxTime == 2.5)
        #expect(command.network.connectTo == ["a.test:443:127.0.0.1:1", "b.test:443:127.0.0.1:2"])
        #expect(command.input.appIDs == ["ABCDE12345.com.example.app"], "one string for a repeatable option is one value")
        #expect(command.input.domains == ["applinks:a.test", "applinks:b.test"])
        #expect(command.network.userAgent == "Mozilla/5.0 (X11; Linux)", "a value with spaces, which the environment cannot give")
        #expect(command.network.retryDelays == "", "an empty string is a value (no retries)")
        #expect(command.input.region == nil, "null leaves the option unset")
    }

    @Test(arguments: ["aasa-fetch.yaml", "aasa-fetch.yml"])
    func everyTypeFromYAML(name: String) throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write(name, """
            # Sent to the staging server.
            cacert: ca.pem            # relative to this file
            allow-private: true
            json: False
            concurrency: 7
            max-time: 2.5
            connect-to:
              - a.test:443:127.0.0.1:1
              - "b.test:443:127.0.0.1:2"
            app-id: [ABCDE12345.com.example.app, 'FGHIJ67890.com.example.other']
            domain: "applinks:*.example.com"
            user-agent: Foo & Bar *beta*
            region: NO
            """)
        let command = try fetch([], in: folder)
        #expect(command.network.cacert == folder.at("ca.pem"))
        #expect(command.network.allowPrivate)
        #expect(!command.json)
        #expect(command.network.concurrency == 7)
        #expect(command.network.maxTime == 2.5)
        #expect(command.network.connectTo == ["a.test:443:127.0.0.1:1", "b.test:443:127.0.0.1:2"])
        #expect(command.input.appIDs == ["ABCDE12345.com.example.app", "FGHIJ67890.com.example.other"])
        #expect(command.input.domains == ["applinks:*.example.com"])
        #expect(command.network.userAgent == "Foo & Bar *beta*")
        #expect(command.input.region == "NO", "YAML 1.2: NO is a string, not false")
    }

    // MARK: - Precedence

    /// A FIFO with no writer under the default config name (or given with --config) is read as an
    /// empty file at once: every command used to wait on it forever, with no message.
    @Test(.timeLimit(.minutes(1))) func aFIFOUnderTheConfigNameIsNeverWaitedOn() throws {
        let folder = try Folder()
        defer { folder.remove() }
        #expect(mkfifo(folder.at("aasa-fetch.yaml"), 0o600) == 0)
        let options = try fetch(["--domain", "applinks:fifo.test"], in: folder)
        #expect(options.input.domains == ["applinks:fifo.test"])
        let lint = try ToolRunner.run(["lint", folder.at("aasa-fetch.yaml"), "--no-config"], timeout: .seconds(20))
        #expect(lint.status == 1 && lint.stdout.contains("invalid-json"), "\(lint.stdout)\(lint.stderr)")
    }

    @Test func theCommandLineWinsOverTheEnvironmentWhichWinsOverTheFile() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.json", """
            {"cacert": "file.pem", "concurrency": 3, "max-time": 4, "connect-to": ["f:1:g:2", "h:3:i:4"], "domain": "applinks:file.test"}
            """)
        let environment = ["AASA_FETCH_CACERT": "env.pem", "AASA_FETCH_CONCURRENCY": "5", "AASA_FETCH_CONNECT_TO": "e:1:f:2"]
        let fileOnly = try fetch([], in: folder)
        #expect(fileOnly.network.cacert == folder.at("file.pem") && fileOnly.network.concurrency == 3 && fileOnly.network.connectTo == ["f:1:g:2", "h:3:i:4"])
        let withEnvironment = try fetch([], environment, in: folder)
        #expect(withEnvironment.network.cacert == "env.pem")
        #expect(withEnvironment.network.concurrency == 5)
        #expect(withEnvironment.network.connectTo == ["e:1:f:2"], "the environment's list replaces the file's")
        #expect(withEnvironment.network.maxTime == 4, "what the environment does not set still comes from the file")
        let withFlags = try fetch(["--cacert", "flag.pem", "--concurrency=9", "--domain", "applinks:flag.test"], environment, in: folder)
        #expect(withFlags.network.cacert == "flag.pem")
        #expect(withFlags.network.concurrency == 9)
        #expect(withFlags.input.domains == ["applinks:flag.test"], "a repeatable flag replaces the file's values")
        #expect(withFlags.network.connectTo == ["e:1:f:2"])
        #expect(withFlags.network.maxTime == 4)
    }

    @Test func exclusiveGroupsApplyAcrossSources() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.json", #"{"no-store": true, "app": "My.ipa", "domain": "applinks:a.test"}"#)
        // The environment's --cache drops the file's --no-store; its --entitlements the file's --app.
        let cached = try fetch([], ["AASA_FETCH_CACHE": "/srv/aasa", "AASA_FETCH_ENTITLEMENTS": "App.entitlements"], in: folder)
        #expect(!cached.storage.noStore && cached.storage.store.cacheDirectory == "/srv/aasa")
        #expect(cached.input.entitlementsPath == "App.entitlements" && cached.input.appPath == nil)
        // A flag drops them too.
        let stored = try fetch(["--store", "postgres://db/aasa", "--entitlements", "E.entitlements"], in: folder)
        #expect(!stored.storage.noStore && stored.storage.store.storeURL == "postgres://db/aasa")
        #expect(stored.input.appPath == nil)
        // Without a higher source, the file's own choice stands.
        let pure = try fetch([], in: folder)
        #expect(pure.storage.noStore && pure.input.appPath == folder.at("My.ipa"))

        try folder.write("aasa-fetch.json", #"{"cache": "shared", "domain": "applinks:a.test"}"#)
        let noStore = try fetch([], ["AASA_FETCH_NO_STORE": "1"], in: folder)
        #expect(noStore.storage.noStore && noStore.storage.store.cacheDirectory == nil)
        // A flag set to false leaves it unset, as documented: it takes nothing from a lower
        // source (`AASA_FETCH_NO_STORE=0` dropped the file's cache, so the run recorded in ./cache).
        let unset = try fetch([], ["AASA_FETCH_NO_STORE": "0"], in: folder)
        #expect(!unset.storage.noStore && unset.storage.store.cacheDirectory == folder.at("shared"))
        try folder.write("aasa-fetch.json", #"{"cache": "shared", "domain": "applinks:a.test", "fetch": {"no-store": false}}"#)
        let section = try fetch(["fetch"], in: folder)
        #expect(!section.storage.noStore && section.storage.store.cacheDirectory == folder.at("shared"))
        // It still decides its own option: a lower source's `true` does not apply.
        try folder.write("aasa-fetch.json", #"{"allow-private": true, "domain": "applinks:a.test", "fetch": {"json": true}}"#)
        #expect(try fetch([], in: folder).network.allowPrivate)
        #expect(try !fetch([], ["AASA_FETCH_ALLOW_PRIVATE": "0"], in: folder).network.allowPrivate)
        try folder.write("aasa-fetch.json", #"{"allow-private": true, "domain": "applinks:a.test", "fetch": {"allow-private": false}}"#)
        #expect(try !fetch(["fetch"], in: folder).network.allowPrivate)
    }

    /// A list from a config file or a variable has at most 1,000 values (each is an argument the
    /// parser takes in time quadratic in their number: 60,000 entries, a 1 MB file, ran for
    /// minutes); more is a usage error that points to --domains FILE.
    @Test func longListsFromAFileOrAVariableAreRefused() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let many = (0...OptionSources.listLimit).map { "\"applinks:h\($0).test\"" }.joined(separator: ",")
        try folder.write("aasa-fetch.json", "{\"domain\": [\(many)]}")
        let fromFile = try #require(failure([], in: folder))
        #expect(fromFile.status == 64 && fromFile.message.contains("has 1001 values") && fromFile.message.contains("--domains FILE"), "\(fromFile)")
        try folder.write("aasa-fetch.json", "{}")
        let variable = (0...OptionSources.listLimit).map { "applinks:h\($0).test" }.joined(separator: " ")
        let fromEnvironment = try #require(failure([], ["AASA_FETCH_DOMAIN": variable], in: folder))
        #expect(fromEnvironment.status == 64 && fromEnvironment.message.contains("AASA_FETCH_DOMAIN has 1001 values"), "\(fromEnvironment)")
        let within = (1...OptionSources.listLimit).map { "applinks:h\($0).test" }.joined(separator: " ")
        #expect(try fetch([], ["AASA_FETCH_DOMAIN": within], in: folder).input.domains.count == OptionSources.listLimit)
    }

    /// When the options cannot be resolved, the error takes a format only the command has (show
    /// has no --format: AASA_FETCH_FORMAT=sarif made its error a SARIF document), and the default
    /// command reads the `fetch` section as `aasa-fetch fetch` does.
    @Test func anErrorBeforeParsingTakesOnlyAFormatTheCommandHas() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let show = try ToolRunner.run(["show", "--config", folder.at("missing.yaml")], environment: ["AASA_FETCH_FORMAT": "sarif"])
        #expect(show.status == 2 && show.stdout.isEmpty && show.stderr.contains("config-unreadable"), "\(show.stdout)\(show.stderr)")
        try folder.write("e.yaml", "fetch:\n  json: true\nbogus: 1\n")
        for command in [["fetch"], []] {
            let run = try ToolRunner.run(command + ["--domain", "a.invalid", "--config", folder.at("e.yaml")])
            #expect(run.status == 64 && run.stdout.contains("\"error\""), "\(command): \(run.stdout)\(run.stderr)")
        }
    }

    /// `AASA_FETCH_NO_CONFIG=1` reads no file, that of `AASA_FETCH_CONFIG` included (the two were
    /// refused together as a usage error).
    @Test func noConfigFromTheEnvironmentWinsOverTheConfigVariable() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("other.json", #"{"domain": "applinks:file.test"}"#)
        let options = try fetch(["--domain", "applinks:flag.test"], ["AASA_FETCH_NO_CONFIG": "1", "AASA_FETCH_CONFIG": folder.at("other.json")], in: folder)
        #expect(options.input.domains == ["applinks:flag.test"])
    }

    // MARK: - Commands and sections

    @Test func oneFileServesEveryCommandAndASectionWinsForItsCommand() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.yaml", """
            cacert: ca.pem
            concurrency: 8
            cache: store
            domain: applinks:a.test
            out: exported
            watch: false
            refresh:
              concurrency: 2
              json: true
            fetch:
              no-store: true
            entitlements: App.entitlements
            """)
        let fetch = try fetch([], in: folder)
        #expect(fetch.network.concurrency == 8)
        #expect(fetch.storage.noStore && fetch.storage.store.cacheDirectory == nil, "the section's no-store drops the top level's cache")
        #expect(fetch.input.entitlementsPath == folder.at("App.entitlements"), "entitlements as a string is the option, not the command's section")
        let refresh = try #require(try AASAFetchCommand.parseAsRoot(try resolve(["refresh"], in: folder).arguments) as? AASAFetchCommand.Refresh)
        #expect(refresh.network.concurrency == 2 && refresh.json)
        #expect(refresh.store.cacheDirectory == folder.at("store") && refresh.network.cacert == folder.at("ca.pem"))
        // lint takes none of these options: all ignored.
        #expect(try resolve(["lint", "a.json"], in: folder).arguments == ["lint", "a.json"])
        let export = try #require(try AASAFetchCommand.parseAsRoot(try resolve(["export"], in: folder).arguments) as? AASAFetchCommand.Export)
        #expect(export.out == folder.at("exported"))
    }

    // MARK: - Errors that name the key

    @Test(arguments: [
        (#"{"cacrt": "ca.pem"}"#, #"line 1: "cacrt" is not an option of any command (did you mean "cacert"?)"#),
        ("{\n  \"cacert\": [\"a.pem\", \"b.pem\"]\n}", #"line 2: "cacert" takes one value (a string or a number), not a list"#),
        ("{\n\n  \"allow-private\": \"yes\"\n}", #"line 3: "allow-private" is a flag: give true or false, not a string"#),
        (#"{"json": 1}"#, #""json" is a flag: give true or false, not a number"#),
        (#"{"concurrency": 1.5, "domain": "a.test"}"#, #"line 1: "concurrency" (1.5): The value '1.5' is invalid for '--concurrency <n>'"#),
        (#"{"concurrency": "lots", "domain": "a.test"}"#, #""concurrency" (lots): The value 'lots' is invalid"#),
        (#"{"max-time": {"s": 1}}"#, #""max-time" takes one value (a string or a number), not an object"#),
        (#"{"app-id": ["A.b", true]}"#, #""app-id" (item 2) takes strings or numbers, not a boolean"#),
        (#"{"app-id": true}"#, #""app-id" takes a string or a list of strings, not a boolean"#),
        (#"{"refresh": {"entitlements": "x"}}"#, #""entitlements" is not an option of refresh"#),
        (#"{"refresh": {"interval": [1]}}"#, #""refresh.interval" takes one value"#),
        (#"{"out": true}"#, #""out" takes one value (a string or a number), not a boolean"#),
        (#"{"config": "other.json"}"#, #""config" cannot be set in a config file"#),
        (#"{"now": "2026-01-01"}"#, #""now" is not an option of any command"#),
        // A command's section that is not an object: not "did you mean" the same name.
        (#"{"plan": 5}"#, #"line 1: "plan" is a command: its section holds its options"#),
    ])
    func aKeyOrTypeProblemIsAUsageErrorNamingTheKey(text: String, expected: String) throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.json", text)
        let error = try #require(failure(["--domain", "applinks:a.test"], in: folder))
        #expect(error.status == 64)
        #expect(error.code == "usage")
        #expect(error.message.contains("config file \(folder.path)/aasa-fetch.json"), "\(error.message)")
        #expect(error.message.contains(expected), "\(error.message)")
    }

    @Test func theBinaryNamesTheKeyAndExits64() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.yaml", "domain: applinks:a.test\nno-store: true\nconcurency: 8\n")
        let result = try run([], in: folder)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(#"aasa-fetch: usage: config file aasa-fetch.yaml, line 3: "concurency" is not an option of any command (did you mean "concurrency"?)"#), "\(result.stderr)")
        try folder.write("aasa-fetch.yaml", "domain: applinks:a.test\nno-store: true\nconcurrency: 1.5\n")
        let json = try run(["--json"], in: folder)
        #expect(json.status == 64)
        let document = try json.json()
        let error = try #require(document["error"] as? [String: Any])
        #expect(error["code"] as? String == "usage")
        #expect((error["message"] as? String)?.contains(#"config file aasa-fetch.yaml, line 3: "concurrency" (1.5)"#) == true, "\(error)")
    }

    // MARK: - Malformed, unreadable and too large files

    @Test(arguments: [
        ("aasa-fetch.json", "{\n  \"cacert\": \"ca.pem\",\n}\n", "line 3: invalid JSON"),
        ("aasa-fetch.json", "{\"cacert\": \"a\",\n \"cacert\": \"b\"}", #"line 2: "cacert" is given twice (first on line 1)"#),
        ("aasa-fetch.json", "[\"cacert\"]", "line 1: the file must be an object of option names, not a list"),
        ("aasa-fetch.yaml", "cacert: ca.pem\nconnect-to: [a, b\nquiet: true\n", "line 3: invalid YAML at column 6: did not find expected ',' or ']' while parsing a flow sequence started on line 2"),
        ("aasa-fetch.yaml", "cacert: a\n\ncacert: b\n", "line 1: \"cacert\" is given more than once"),
        ("aasa-fetch.yaml", "- cacert\n", "line 1: the file must be a mapping of option names, not a list"),
        ("aasa-fetch.yaml", "base: &b applinks:a.test\ndomain: *b\n", "line 1: anchors and aliases"),
        ("aasa-fetch.yaml", "domain:\n  - *.example.com\n", "line 2: anchors and aliases"),
        ("aasa-fetch.yaml", "cacert: a\n---\ncacert: b\n", "line 2: a second YAML document (a config file holds one)"),
        ("aasa-fetch.yml", "cacert: ca.pem\nuser-agent: \u{FFFD}\n", ""),
        ("aasa-fetch.json", "{\"a\": " + String(repeating: "[", count: 17) + String(repeating: "]", count: 17) + "}", "line 1: invalid JSON at column 22: nesting deeper than 16"),
        ("aasa-fetch.yaml", "cacert:\n  " + String(repeating: "[", count: 17) + String(repeating: "]", count: 17), "line 2: nested more than 16 levels"),
        ("aasa-fetch.yaml", "a: " + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000), "line 1: invalid YAML"),
    ])
    func aMalformedFileIsConfigInvalidWithItsLine(name: String, text: String, expected: String) throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write(name, text)
        let error = failure(["--domain", "applinks:a.test"], in: folder)
        if expected.isEmpty {
            #expect(error == nil, "valid UTF-8 is read")
            return
        }
        let found = try #require(error)
        #expect(found.code == "config-invalid", "\(found.message)")
        #expect(found.status == 64)
        #expect(found.message.contains("config file \(folder.path)/\(name), \(expected)"), "\(found.message)")
    }

    @Test func notUTF8IsConfigInvalidWithTheLine() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try (Data("cacert: ca.pem\nuser-agent: ".utf8) + [0xFF, 0x0A]).write(to: folder.url.appendingPathComponent("aasa-fetch.yaml"))
        let error = try #require(failure([], in: folder))
        #expect(error.code == "config-invalid")
        #expect(error.message.hasSuffix("aasa-fetch.yaml, line 2: not UTF-8 text"), "\(error.message)")
    }

    @Test func unreadableAndTooLargeFilesHaveTheirCodes() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let missing = try run(["--config", "nowhere.json", "--domain", "a.test"], in: folder)
        #expect(missing.status == 2)
        #expect(missing.stderr == "aasa-fetch: config-unreadable: cannot read config file nowhere.json: No such file or directory\n")
        try FileManager.default.createDirectory(at: folder.url.appendingPathComponent("aasa-fetch.json"), withIntermediateDirectories: false)
        let directory = try run(["--domain", "a.test"], in: folder)
        #expect(directory.status == 2)
        #expect(directory.stderr.contains("config-unreadable: cannot read config file aasa-fetch.json: it is a folder"), "\(directory.stderr)")
        try folder.write("big.yaml", "# " + String(repeating: "x", count: ConfigFile.sizeLimit) + "\n")
        let big = try run(["--config", "big.yaml", "--domain", "a.test"], in: folder)
        #expect(big.status == 2)
        #expect(big.stderr.hasPrefix("aasa-fetch: config-too-large: config file big.yaml is \(ConfigFile.sizeLimit + 3) bytes, over the \(ConfigFile.sizeLimit)-byte limit"), "\(big.stderr)")
        // --help reads no config file, broken or not.
        try folder.write("aasa-fetch.yaml", "{")
        let help = try run(["--help"], in: folder)
        #expect(help.status == 0)
    }

    // MARK: - Which file

    @Test func theDefaultFileAndTheOptionsThatChooseAnother() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("aasa-fetch.json", #"{"cacert": "default.pem"}"#)
        try folder.write("other/chosen.yaml", "cacert: chosen.pem\n")
        let arguments = ["--domain", "applinks:a.test"]
        #expect(try fetch(arguments, in: folder).network.cacert == folder.at("default.pem"))
        #expect(try fetch(arguments + ["--no-config"], in: folder).network.cacert == nil)
        #expect(try fetch(arguments + ["--config", "\(folder.path)/other/chosen.yaml"], in: folder).network.cacert == "\(folder.path)/other/chosen.pem")
        #expect(try fetch(arguments, ["AASA_FETCH_CONFIG": "\(folder.path)/other/chosen.yaml"], in: folder).network.cacert == "\(folder.path)/other/chosen.pem")
        #expect(try fetch(arguments + ["--no-config"], ["AASA_FETCH_CONFIG": "\(folder.path)/other/chosen.yaml"], in: folder).network.cacert == nil)
        #expect(try fetch(arguments, ["AASA_FETCH_NO_CONFIG": "1"], in: folder).network.cacert == nil)
        #expect(try fetch(arguments, ["AASA_FETCH_NO_CONFIG": "0"], in: folder).network.cacert == folder.at("default.pem"))
        #expect(try fetch(arguments + ["--config=\(folder.path)/other/chosen.yaml"], ["AASA_FETCH_NO_CONFIG": "1"], in: folder).network.cacert == "\(folder.path)/other/chosen.pem")

        let both = try #require(failure(arguments + ["--config", "x.json", "--no-config"], in: folder))
        #expect(both.status == 64 && both.message.contains("--config and --no-config cannot be given together"), "\(both.message)")

        try folder.write("aasa-fetch.yml", "cacert: yml.pem\n")
        let two = try #require(failure(arguments, in: folder))
        #expect(two.status == 64 && two.code == "usage")
        #expect(two.message.contains("two config files, aasa-fetch.json and aasa-fetch.yml"), "\(two.message)")
        #expect(try fetch(arguments + ["--no-config"], in: folder).network.cacert == nil, "--no-config skips the search")
        #expect(try fetch(arguments + ["--config", "\(folder.path)/aasa-fetch.yml"], in: folder).network.cacert == "\(folder.path)/yml.pem")
    }

    @Test func everyCommandTakesConfigAndNoConfig() throws {
        for command in OptionSources.allCommands(AASAFetchCommand.self).dropFirst() {
            let keys = OptionSpec.options(of: command).map(\.key)
            #expect(keys.contains("config") && keys.contains("no-config"), "\(command._commandName)")
        }
    }

    // MARK: - Paths

    @Test func relativePathsAreRelativeToTheFilesFolder() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try folder.write("conf/aasa-fetch.yaml", """
            cacert: ca.pem
            cache: ../store
            domains: lists/hosts.txt
            entitlements: /abs/App.entitlements
            user-agent: some/agent
            define: [DIR=a/b]
            """)
        // The file named by a relative path (from the working directory) in the binary: "conf/".
        let file = ConfigFile(path: "conf/aasa-fetch.yaml", members: [])
        #expect(file.resolve("ca.pem") == "conf/ca.pem" && file.resolve("/etc/ca.pem") == "/etc/ca.pem" && file.resolve("-") == "-")
        #expect(ConfigFile(path: "aasa-fetch.yaml", members: []).resolve("ca.pem") == "ca.pem")
        let command = try fetch(["--config", folder.at("conf/aasa-fetch.yaml")], in: folder)
        #expect(command.network.cacert == folder.at("conf/ca.pem"))
        #expect(command.storage.store.cacheDirectory == folder.at("conf/../store"))
        #expect(command.input.domainsFile == folder.at("conf/lists/hosts.txt"))
        #expect(command.input.entitlementsPath == "/abs/App.entitlements", "an absolute path stays")
        #expect(command.network.userAgent == "some/agent", "a value that is not a path stays")
        #expect(command.input.definitions == ["DIR=a/b"])
        // In the working directory, the paths are as written.
        try folder.write("aasa-fetch.yaml", "cacert: ca.pem\ndomains: '-'\n")
        let here = try fetch([], in: folder)
        #expect(here.network.cacert == folder.at("ca.pem"))
        #expect(here.input.domainsFile == "-", "standard input stays")
    }

    /// End to end with the binary, from a folder that is not the file's: the file (with a relative
    /// `cacert`) sends the run to the example sites, the environment and flags override it.
    @Test(.timeLimit(.minutes(3)))
    func theBinaryReadsTheConfigFile() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        let folder = try Folder()
        defer { folder.remove() }
        try FileManager.default.createDirectory(at: folder.url.appendingPathComponent("etc"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: sites.ca.caCertPath, toPath: folder.url.appendingPathComponent("etc/ca.pem").path)
        let connectTo = try #require(sites.environment()["AASA_FETCH_CONNECT_TO"])
        try folder.write("etc/aasa-fetch.json", """
            {
              "cacert": "ca.pem",
              "connect-to": ["\(connectTo)"],
              "allow-private": true,
              "app-id": ["ABCDE12345.com.example.app"],
              "no-store": true,
              "quiet": true,
              "json": true
            }
            """)
        let arguments = ["--domain", "applinks:shop.example.net"]
        let viaFile = try run(arguments, in: folder, environment: ["AASA_FETCH_CONFIG": "etc/aasa-fetch.json"])
        #expect(viaFile.status == 0, "\(viaFile.stderr)")
        #expect(try viaFile.json().domain("shop.example.net")?["code"] as? String == "ok")

        let closed = try Loopback.freePort()
        let environmentWins = try run(
            arguments + ["--config", "etc/aasa-fetch.json", "--retry-delays", ""], in: folder,
            environment: ["AASA_FETCH_CONNECT_TO": "::127.0.0.1:\(closed)"])
        #expect(environmentWins.status == 1)
        #expect(try environmentWins.json().domain("shop.example.net")?["code"] as? String == "connect-failure")

        let flagWins = try run(
            arguments + ["--config", "etc/aasa-fetch.json", "--connect-to", connectTo], in: folder,
            environment: ["AASA_FETCH_CONNECT_TO": "::127.0.0.1:\(closed)"])
        #expect(flagWins.status == 0, "\(flagWins.stderr)")

        // Without the file's cacert the test CA is not trusted.
        let ignored = try run(arguments + ["--config", "etc/aasa-fetch.json", "--no-config", "--json"], in: folder)
        #expect(ignored.status == 64)
        let noFile = try run(arguments + ["--no-config", "--json", "--no-store", "--allow-private", "--connect-to", connectTo, "--retry-delays", ""], in: folder)
        #expect(noFile.status == 1)
        #expect(try noFile.json().domain("shop.example.net")?["code"] as? String == "tls-untrusted")
    }
}

/// The thread a YAML config is parsed on: Yams recurses once a level (about 2.5 KiB of stack each
/// in a release build), more than a 2 MiB thread stack holds for the 1,000 levels libyaml accepts.
struct LargeStackTests {
    /// The work runs on a thread whose stack is ``LargeStack/bytes``, and its result comes back.
    @Test func theWorkRunsOnAStackOfItsSize() {
        let size: Int = LargeStack.run {
            typealias GetAttributes = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
            guard let symbol = dlsym(nil, "pthread_getattr_np") else { return -1 }
            // Allocated, not `pthread_attr_t()`: that initializer is the C shim module's to this file.
            let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
            defer { attributes.deallocate() }
            guard unsafeBitCast(symbol, to: GetAttributes.self)(pthread_self(), attributes) == 0 else { return -2 }
            defer { pthread_attr_destroy(attributes) }
            var size = 0
            pthread_attr_getstacksize(attributes, &size)
            return size
        }
        #expect(size >= LargeStack.bytes, "stack of \(size) bytes")
        #expect(LargeStack.run { (1...10).reduce(0, +) } == 55)
    }
}
